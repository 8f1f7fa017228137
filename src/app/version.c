// The version string the Makefile bakes in (ZT_VERSION, rebuilt when `git describe` changes).
#include "version.h"

#ifndef ZT_VERSION
#define ZT_VERSION "unknown"
#endif

const char *zt_version(void) { return ZT_VERSION; }
