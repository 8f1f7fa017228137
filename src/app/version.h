// zerotrain's version: `git describe --always --dirty` when the Makefile built it from a git
// checkout, else "unknown".
#ifndef ZT_VERSION_H
#define ZT_VERSION_H

const char *zt_version(void);

#endif
