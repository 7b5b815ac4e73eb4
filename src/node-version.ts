// The Node okt needs: package.json's `engines` (a unit test keeps the three equal: this, engines, and
// the same check in plain JavaScript in bin/okt.js, which must run on a Node that cannot read TypeScript).
export const REQUIRED_NODE = { major: 22, minor: 19 } as const;

/** The one line that says what to do on an older Node, or undefined when `version` (`x.y.z`) will do. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const { major: needMajor, minor: needMinor } = REQUIRED_NODE;
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return (
    `okt needs Node >= ${needMajor}.${needMinor} (this is ${version}): run it through npm (npx okt, npm test, npm start) ` +
    `with Node 24 in the project: npm pkg set allowScripts.node=true --json && npm install --save-dev node@24`
  );
}
