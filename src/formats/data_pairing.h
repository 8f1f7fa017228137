// A train file and its validation file written by one `prepare`: the two renames that put
// them in place cannot be one, so a kill between them paired a new train file with the old
// validation file, and training used the two without a word. A marker beside the train file,
// "<train>.unpaired", exists from before the first rename to after the second; training
// refuses a train file that has one. Also the removal of a killed prepare's temporaries.
#ifndef ZT_DATA_PAIRING_H
#define ZT_DATA_PAIRING_H

#include "common.h"

// Writes "<train>.unpaired" (naming `val`), synced, before the renames. ZT_ERR if it cannot.
zt_status zt_pair_begin(const char *train, const char *val);
// Removes the marker after both renames.
void zt_pair_end(const char *train);
// ZT_ERR (naming both files and the fix) when `train` has a marker: the prepare that wrote
// it stopped before its validation file was put in place.
zt_status zt_pair_check(const char *train, const char *val);

// Removes the temporaries ("<path>.tmp.<pid>.<host>") of token files that a prepare killed
// on this host left for `path`, saying so. (A marker stays until a prepare of the pair
// completes.)
void zt_token_tmps_remove_dead(const char *path);

#endif
