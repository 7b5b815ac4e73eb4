// What the e2e global setup hands to the tests (vitest `provide` / `inject`).
declare module 'vitest' {
  export interface ProvidedContext {
    /** A kubeconfig (admin) for the control plane of this run. */
    kubeconfigPath: string;
    /** The Kubernetes release the control plane runs (`1.37.2`): a test that shows a difference between releases names it. */
    kubernetesVersion: string;
  }
}
export {};
