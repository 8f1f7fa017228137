// The job's MPI lifetime: init (with the parts that start with it) and finalize.
#include <string.h>

#include "comm_mpi_impl.h"

static int g_init_here; // MPI was initialized by zt_comm_mpi_init_world

// MPI_Init_thread at FUNNELED, unless MPI already runs.
static void init_mpi(int *argc, char ***argv) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) zt_fatal(__FILE__, __LINE__, "zt_comm_mpi_init_world after MPI_Finalize");
    if (init) return;
    int provided = MPI_THREAD_SINGLE;
    // Before init MPI's default handler is fatal, so a failure mostly ends the process
    // inside MPI with its own message; an error code that does come back is ours to say.
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) zt_fatal(__FILE__, __LINE__, "MPI_Init_thread failed: error %d", rc);
    g_init_here = 1;
    ZT_MPI_ASSERTF(provided >= MPI_THREAD_FUNNELED,
                   "MPI provides thread level %d, zerotrain needs MPI_THREAD_FUNNELED", provided);
}

void zt_comm_mpi_init_world(zt_comm *out, int *argc, char ***argv) {
    ZT_ASSERT(out);
    init_mpi(argc, argv);
    ZT_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    zt_mpi_bf16_ops_create();
    zt_comm_mpi_settings s;
    zt_mpi_settings_read(&s);
    int rank = 0, size = 1;
    ZT_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    ZT_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    zt_set_log_rank(rank);
    zt_mpi_timeout_start(&s, size);
    // Our own handle: the runtime's traffic never matches messages of other MPI users.
    MPI_Comm world = MPI_COMM_NULL;
    ZT_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &world));
    memset(out, 0, sizeof *out);
    zt_mpi_wrap(world, out);
}

void zt_comm_mpi_finalize(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!g_init_here || !init || fin) return;
    zt_mpi_bf16_ops_free();
    ZT_CHECK_MPI(MPI_Finalize());
}
