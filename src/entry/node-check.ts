// Imported first by every entry point of the package: on a Node that okt does not support, importing
// okt fails at once with one line that says what to do, not later with a dependency's TypeError.
import { nodeVersionProblem } from '../node-version.ts';

const problem = nodeVersionProblem();
if (problem !== undefined) {
  const error = new Error(problem);
  error.stack = `Error: ${problem}`; // the line is the message: no frames of okt's to read past
  throw error;
}
