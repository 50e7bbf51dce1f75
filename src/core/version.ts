// The version shown to users; the build replaces nothing at run time, so keep it beside package.json's.
export const PROBELENS_VERSION = '0.1.0';
