// The MPI backend's failure path: the one-line message and the abort that ends every rank
// when one fails (called from every part of the backend, it calls none of them).
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi_impl.h"

void zt_mpi_fatalf(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "zerotrain: fatal (rank %d) %s:%d: ", zt_log_rank(), file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    zt_comm_mpi_abort(1);
    abort(); // MPI is not running: nothing else to end
}

void zt_mpi_fail(const char *file, int line, const char *call, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    int name_len = (int)strcspn(call, "("); // "MPI_Recv", not its whole argument list
    zt_mpi_fatalf(file, line, "%.*s failed: %s", name_len, call, msg);
}

void zt_comm_mpi_abort(int code) {
    int init = 0, fin = 0;
    // Both are callable at any time, before init and after finalize.
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) return;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    abort(); // MPI_Abort does not return; should it, still end this rank
}
