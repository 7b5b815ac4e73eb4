// What the e2e global setup hands to the tests (vitest `provide` / `inject`).
declare module 'vitest' {
  export interface ProvidedContext {
    /** A kubeconfig (admin) for the control plane of this run. */
    kubeconfigPath: string;
  }
}
export {};
