// okt's version: package.json's (a unit test keeps them equal); `okt --version` prints it.
export const version = '0.1.0';
