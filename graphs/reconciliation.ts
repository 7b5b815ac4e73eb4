import { defineGraph } from '../src/graph/index.ts';

// Every step may debranch to ErrorManager or GiveupManager: triggers, tried before the normal course.
const debranch = ['ErrorManager', 'GiveupManager'] as const;

/** OKT's reconciliation graph (the Stepper engine): one reconcile walks it from CRChecker to End. */
export const reconciliationGraph = defineGraph({
  name: 'reconciliation',
  description: "OKT's reconciliation steps, with error and give-up debranching at every step.",
  entry: 'CRChecker',
  nodes: {
    CRChecker: {
      triggers: debranch,
      children: ['CRFinalizer', 'ObjectsGetter'],
      description: 'Checks the custom resource received from the queue.',
    },
    CRFinalizer: {
      triggers: debranch,
      children: ['End'],
      description: 'The resource is being deleted and has a finalizer: clean up.',
    },
    ObjectsGetter: {
      triggers: debranch,
      children: ['Mutator'],
      description: 'Gets every object the operator manages for this resource.',
    },
    Mutator: { triggers: debranch, children: ['Updater'], description: 'Mutates the objects to the desired state.' },
    Updater: {
      triggers: debranch,
      children: ['SuccessManager'],
      description: 'Creates or updates the objects on the cluster.',
    },
    SuccessManager: { triggers: debranch, children: ['End'], description: 'Reached after a successful update.' },
    ErrorManager: { triggers: ['GiveupManager'], children: ['End'], description: 'An error was raised by a step.' },
    GiveupManager: {
      children: ['End'],
      description: 'An unrecoverable error, or nothing more can be done for now: give up this reconcile.',
    },
    End: { description: 'The end of the reconcile.' },
  },
});
