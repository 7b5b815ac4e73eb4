import type { ModuleAction } from 'okt/sidecar';

// The action of Running, a TypeScript module: start the application here. Return the events to raise
// (a child's name, or 'DefaultState'), or nothing: the resource then rests on Running until its
// spec.desiredState moves it on. A throw fails the action (the resource stalls: ActionFailed).
const start: ModuleAction = ({ operationId, log }) => {
  log(`{{name}} is running (operation ${operationId})`);
};
export default start;
