// The typed client of the okt sidecar and the protocol it speaks (shared with the server in sidecar/).
export {
  SidecarClient,
  SidecarError,
  SidecarUnavailableError,
  SidecarProblemError,
  SidecarProtocolError,
  isSidecarError,
  type SidecarClientOptions,
  type SidecarErrorKind,
} from './client.ts';
export {
  API_PREFIX,
  DEFAULT_STATE_EVENT,
  EPOCH_HEADER,
  EpochSchema,
  MAX_WAIT_MS,
  PROTOCOL_VERSION,
  TERMINAL_PHASES,
  isTerminal,
  OperationSchema,
  ObservationSchema,
  ProblemSchema,
  StartOperationRequestSchema,
  type Observation,
  type ObservedEvent,
  type Operation,
  type Phase,
  type Problem,
  type Reason,
  type StartOperationRequest,
} from './protocol.ts';
export { SidecarTokenError, readTokenFile } from './token-file.ts';
