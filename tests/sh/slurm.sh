#!/usr/bin/env bash
# A real Slurm on this machine (issue 28, item 3): Debian's slurmctld and slurmd, started by
# this test on private ports with a one-node slurm.conf of its own (auth/none, else munge with
# a munged of its own), train the 2-rank layout of `mpirun -np 2` with its losses, bit for bit:
#   (a) `srun -n 2 --mpi=P` for each of pmix and pmi2 that this Slurm has; the test says which
#       work and fails if none does. With Debian 12 (Slurm 22.05, Open MPI 4.1.4 on PMIx 4.2)
#       pmix works; pmi2 does not (Open MPI is built without Slurm's PMI-2: every rank stops in
#       MPI_Init), and neither does --mpi=none: no launch trains as independent 1-rank runs;
#   (b) `sbatch` of a script that runs `mpirun -np 2` inside the allocation;
#   (c) scripts/slurm_train.sbatch, shrunk on the sbatch command line to 1 node x 2 tasks,
#       stopped by `scancel --signal=USR1` (what its --signal=USR1@120 sends): zerotrain saves
#       and exits 75, the script requeues the job, the second run resumes from the checkpoint;
#       its two logs together equal one uninterrupted run.
# Installs slurm-wlm with apt-get where missing (about 35 s: 3.5 MB; ZT_SLURM_INSTALL=0 SKIPs
# instead); SKIPs with the reason when not root or when it cannot be installed. The daemons,
# and anything they started, are ended on exit: nothing stays running. About 30 s installed.
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
skip() { echo "SKIP: $*"; exit 77; }
command -v mpirun >/dev/null || skip "mpirun not found"
[ "$(id -u)" -eq 0 ] || skip "needs root (to install slurm-wlm, and slurmd starts jobs as their user)"
out=build/test_slurm; rm -rf $out; mkdir -p $out
# Slurm's state, spool (unix sockets: the path must stay short) and logs
d=$(mktemp -d "${TMPDIR:-/tmp}/zt_slurm.XXXXXX") || exit 1
export OMP_NUM_THREADS=1
unset ${!SLURM_@} ${!PMIX_@} ${!OMPI_@} # not inside a job of another Slurm or MPI
export SLURM_CONF=$d/slurm.conf
# Every process our daemons start (slurmstepd, the job's tasks) inherits this: the sweep below
# finds them by it, and only them
export ZT_SLURM_TEST=$d
fail=0
bad() { echo "FAIL: $*"; fail=1; }

pids=() # the daemons, in start order
policy="" # a policy-rc.d this test put there for the install
alive() { # any of these processes still running (not yet ended: a zombie has ended)
  local p
  for p; do grep -qv '^[0-9]* (.*) Z ' /proc/$p/stat 2>/dev/null && return 0; done
  return 1
}
teardown() {
  trap - EXIT
  local i p f
  if [ ${#pids[@]} -gt 0 ]; then
    scancel --quiet --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null # every job is ours
    for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
    # the last started first: munged outlives the daemons that use it
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
      p=${pids[$i]}
      kill -TERM $p 2>/dev/null
      for _ in $(seq 50); do alive $p || break; sleep 0.1; done
      kill -KILL $p 2>/dev/null
      wait $p 2>/dev/null
    done
  fi
  # what outlived them (a slurmstepd, a task): its environment holds our marker
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
    grep -qzx "ZT_SLURM_TEST=$d" "$f" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  [ -n "$policy" ] && rm -f "$policy"
  # keep the daemons' logs of a failed run
  [ $fail -ne 0 ] && cp "$d"/*.log $out/ 2>/dev/null
  rm -rf "$d"
}
trap teardown EXIT

# ---------------------------------------------------------------- install
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v srun >/dev/null; then
  command -v apt-get >/dev/null || skip "slurmctld/slurmd/srun not installed, and no apt-get to install slurm-wlm"
  [ "${ZT_SLURM_INSTALL:-1}" = 0 ] && skip "slurmctld/slurmd/srun not installed (ZT_SLURM_INSTALL=0: not installing slurm-wlm)"
  # no service may start during the install (a Docker image has this file already)
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy
  fi
  inst() { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends \
             slurm-wlm >> $out/apt.log 2>&1; }
  t0=$(date +%s)
  inst || { timeout 300 apt-get update -q >> $out/apt.log 2>&1; inst; } ||
    skip "apt-get install slurm-wlm failed: $(grep -E '^(E|W):' $out/apt.log | tail -1)"
  [ -n "$policy" ] && rm -f $policy && policy=""
  echo "installed slurm-wlm in $(( $(date +%s) - t0 )) s"
fi

# ---------------------------------------------------------------- configure, start
h=$(hostname -s)
cpus=$(nproc); [ "$cpus" -ge 2 ] || cpus=2 # 2 tasks; config_overrides lets a 1-core machine say 2
port=$(( 20000 + ($$ % 10000) * 2 )) # private ports: a Slurm of this machine's keeps its own
auth=${ZT_SLURM_AUTH:-}
if [ -z "$auth" ]; then # auth/none where this build has it (Debian's 22.05 does), else munge
  auth=munge
  for p in /usr/lib/*/slurm-wlm/auth_none.so /usr/lib/*/slurm/auth_none.so /usr/lib*/slurm/auth_none.so; do
    [ -f "$p" ] && auth=none && break
  done
fi
# A requeued job waits for its credentials' lifetime before it runs again (the job id is the
# same: slurmd must forget the first run's credentials and steps first): 120 s by default
CRED=5
if [ $auth = munge ]; then
  command -v munged >/dev/null || skip "this Slurm has no auth/none and munged is not installed"
  head -c 1024 /dev/urandom > $d/munge.key && chmod 400 $d/munge.key
  munged --foreground --force --key-file=$d/munge.key --socket=$d/munge.sock \
         --pid-file=$d/munged.pid --log-file=$d/munged.log --seed-file=$d/munge.seed \
         > $d/munged.out 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do [ -S $d/munge.sock ] && break; sleep 0.1; done
  AUTH="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock,cred_expire=$CRED"
else
  AUTH="AuthType=auth/none
CredType=cred/none
AuthInfo=cred_expire=$CRED"
fi
mkdir -p $d/state $d/spool
cat > $SLURM_CONF <<EOF
ClusterName=zt
SlurmctldHost=$h(127.0.0.1)
SlurmUser=root
SlurmdUser=root
$AUTH
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
TmpFS=$d
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=$h NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=zt Nodes=$h Default=YES MaxTime=INFINITE State=UP
EOF
# -D: in the foreground of a background job of this shell, so that its pid is the daemon's
slurmctld -D -f $SLURM_CONF > $d/slurmctld.out 2>&1 &
pids+=($!)
slurmd -D -f $SLURM_CONF > $d/slurmd.out 2>&1 &
pids+=($!)
state=""
for _ in $(seq 150); do
  state=$(sinfo -h -n $h -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  fail=1
  tail -5 $d/slurmctld.out $d/slurmd.out
  echo "FAIL: the node is not idle after 30 s (sinfo: '$state')"
  exit 1
fi
echo "$(srun --version): node $h idle (auth/$auth, $cpus CPUs, ports $port-$((port + 1)))"

# ---------------------------------------------------------------- the reference
ZT=$PWD/build/zerotrain
ARGS=(--n-layer 2 --n-head 2 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps 4
      --micro-batch 2 --dp 2 --zero 1 --val-every 0)
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2)
timeout 120 "${MPI[@]}" $ZT "${ARGS[@]}" --log $out/mpirun.jsonl > $out/mpirun.out 2>&1 ||
  { cat $out/mpirun.out; bad "the mpirun reference failed"; exit 1; }
same() { # log, what[, reference, steps A..B]: the log holds the reference's losses of steps
           # A..B (default: the 4-step run, 1..4), bit for bit
  "$PY" tests/ckpt/compare_losses.py "${3:-$out/mpirun.jsonl}" "$1" > "$1.cmp" 2>&1 &&
    grep -q "^steps ${4:-1..4}:" "$1.cmp" || { cat "$1.cmp"; bad "$2: the losses differ from mpirun's"; return 1; }
}

# ---------------------------------------------------------------- (a) srun --mpi=P
have=$(srun --mpi=list 2>&1 | sed -n 's/^[[:space:]]\+//p')
works=()
for p in pmix pmi2; do
  grep -qx $p <<< "$have" || { echo "note srun --mpi=$p: this Slurm has no such plugin"; continue; }
  timeout 120 srun -n 2 --mpi=$p $ZT "${ARGS[@]}" --log $out/srun_$p.jsonl > $out/srun_$p.out 2>&1
  rc=$?
  if [ $rc -eq 0 ] && same $out/srun_$p.jsonl "srun --mpi=$p" > /dev/null; then
    works+=($p); echo "ok   srun -n 2 --mpi=$p: the losses of mpirun -np 2, bit for bit"
  else
    why=$(grep -m1 -oE "OMPI was not built with SLURM's PMI support|[^ ].*(error|abort).*" $out/srun_$p.out)
    echo "note srun -n 2 --mpi=$p does not work here (exit $rc): ${why:-see $out/srun_$p.out}"
  fi
done
[ ${#works[@]} -gt 0 ] && echo "ok   the PMI plugin that works: ${works[*]}" ||
  bad "no srun --mpi plugin trains 2 ranks (tried: pmix pmi2)"
# without a PMI: never two independent runs that both succeed
timeout 120 srun -n 2 --mpi=none $ZT "${ARGS[@]}" > $out/srun_none.out 2>&1 && bad "srun --mpi=none exited 0"
grep -q '^step ' $out/srun_none.out && bad "srun --mpi=none trained (independent 1-rank runs)" ||
  echo "ok   srun -n 2 --mpi=none: refused, nothing trained"

jobstate() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_job() { # job, seconds: waits until the job has ended, prints its state
  # (`sbatch --wait` polls every 2 to 10 s, and would return at a requeue)
  local st=""
  for _ in $(seq $(($2 * 10))); do
    st=$(jobstate "$1")
    case $st in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break;; esac
    sleep 0.1
  done
  echo "$st"
}

# ---------------------------------------------------------------- (b) sbatch + mpirun
cat > $out/mpirun.sbatch <<EOF
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --output=$PWD/$out/sbatch_mpirun.out
# mpirun finds the allocation's hosts and slots through Slurm's variables, starts its daemons by srun
mpirun --allow-run-as-root -x OMP_NUM_THREADS -np 2 $ZT ${ARGS[*]} --log $PWD/$out/sbatch_mpirun.jsonl
EOF
job=$(sbatch --parsable $out/mpirun.sbatch 2> $out/sbatch_mpirun.submit)
st=$(wait_job $job 120)
if [ "$st" = COMPLETED ] && same $out/sbatch_mpirun.jsonl "sbatch + mpirun"; then
  echo "ok   sbatch + mpirun -np 2: the losses of mpirun -np 2, bit for bit"
else
  cat $out/sbatch_mpirun.submit $out/sbatch_mpirun.out 2>/dev/null | tail -20; bad "sbatch + mpirun: job '$job' $st"
fi

# ---------------------------------------------------------------- (c) the example, preempted and requeued
STEPS=100 # long enough that the signal lands mid-run (10-30 ms a step on 2 cores)
EX=(--n-layer 2 --n-head 2 --n-embd 64 --vocab 256 --n-ctx 64 --seq 32 --steps $STEPS
    --micro-batch 2 --zero 1 --val-every 0 --seed 7)
timeout 120 "${MPI[@]}" $ZT "${EX[@]}" --log $out/full.jsonl > $out/full.out 2>&1 ||
  { cat $out/full.out; bad "the uninterrupted reference failed"; exit 1; }
run=$PWD/$out/example
job=$(sbatch --parsable --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=5 \
        --output=$PWD/$out/example.out --export=ALL,RUN=$run,ZT=$ZT \
        scripts/slurm_train.sbatch "${EX[@]}") || { bad "sbatch of the example refused"; exit 1; }
for _ in $(seq 300); do grep -q '"step":3,' $run/log.0.jsonl 2>/dev/null && break; sleep 0.05; done
scancel --signal=USR1 $job
# the requeued job starts again $CRED s later (cred_expire above; sched_interval=1: the
# scheduler looks at it within a second, not the default minute)
st=$(wait_job $job 120); restarts=$(scontrol show job -o $job | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
step=$(grep -o 'saved .*/step-[0-9]*' $out/example.out | sed 's/.*step-//')
if [ "$st" = COMPLETED ] && [ "$restarts" = 1 ] && [ -n "$step" ] &&
   grep -q 'stopped at a checkpoint .*requeueing' $out/example.out &&
   grep -q "resumed from .*step-$step" $out/example.out; then
  echo "ok   scripts/slurm_train.sbatch: USR1 saved step $step, exit 75, requeued, resumed, completed"
else
  grep -v '^step ' $out/example.out; bad "the example: state $st, restarts $restarts, checkpoint '$step'"
fi
[ -n "$step" ] && same $run/log.0.jsonl "the example's first run" $out/full.jsonl "1..$step" &&
  same $run/log.1.jsonl "the example's resumed run" $out/full.jsonl "$((step + 1))..$STEPS" &&
  echo "ok   the example's two runs: the losses of one uninterrupted mpirun run, bit for bit"

[ $fail -eq 0 ] && echo "ok: Slurm trains 2 ranks by srun --mpi=${works[0]} and by sbatch + mpirun as mpirun does; the example requeues and resumes exactly"
exit $fail
