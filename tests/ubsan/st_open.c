// tests/sh/safetensors_ubsan.sh builds this with -fsanitize=undefined: opens each file named
// on the command line with the safetensors reader and reads every tensor, printing "ok" or
// the reader's error. Undefined behaviour in the reader stops it with a sanitizer report.
#include <stdio.h>
#include <stdlib.h>

#include "safetensors.h"

int main(int argc, char **argv) {
    int bad = 0;
    for (int a = 1; a < argc; a++) {
        zt_st_file f;
        zt_status s = zt_st_open(&f, argv[a]);
        if (s == ZT_OK) {
            for (int i = 0; i < f.n; i++) {
                float *x = malloc(f.t[i].numel * sizeof(float) + 1);
                zt_st_read_f32(&f, i, 0, f.t[i].numel, x);
                free(x);
            }
            printf("ok %s\n", argv[a]);
        } else {
            printf("refused %s\n", zt_error_message());
            bad++;
        }
        zt_st_close(&f);
    }
    return bad ? 1 : 0;
}
