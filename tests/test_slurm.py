"""A real SLURM for `--executor slurm` (rnnbook.engine): a single-node cluster started on this
machine from Debian's packages (`slurm-wlm`, `munge`; `.ci/run` installs them), or the tests are
skipped saying why. The fixture starts munged (as the munge user), slurmctld and slurmd in the
foreground with a generated `slurm.conf` in a temporary directory (private munge socket, free
ports, no accounting, one node named after the host in partition `debug`), and stops exactly the
processes it started."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle
import pytest

from rnnbook import engine
from rnnbook.cache import Cache
from rnnbook.extrapolation import experiments, train

cloudpickle.register_pickle_by_value(sys.modules[__name__])
DAEMONS = ("munged", "slurmctld", "slurmd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(d: Path, host: str) -> str:
    return "\n".join([
        "ClusterName=rnnbook", f"SlurmctldHost={host}", f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}", "AuthType=auth/munge", f"AuthInfo=socket={d}/munge/socket",
        "CredType=cred/munge", "SlurmUser=root", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "ReturnToService=2", "MpiDefault=none", "MailProg=/bin/true",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
        f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd.log",
        f"NodeName={host} CPUs={os.cpu_count()} RealMemory=1000 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""])


def why_no_slurm() -> str | None:
    missing = [b for b in (*DAEMONS, "sbatch", "sinfo") if not shutil.which(b)]
    if missing:
        return f"no {', '.join(missing)} installed (Debian: apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "starting munged and slurmd needs root"
    return None


@pytest.fixture(scope="module")
def slurm():
    """A running single-node SLURM cluster; yields its SLURM_CONF (also set in os.environ)."""
    reason = why_no_slurm()
    if reason:
        pytest.skip(reason)
    d = Path(tempfile.mkdtemp(prefix="rnnbook-slurm-"))  # not under pytest's 0700 directory:
    d.chmod(0o755)  # munged, as the munge user, must reach its socket and key
    (d / "munge").mkdir(mode=0o711)
    (d / "munge" / "key").write_bytes(os.urandom(1024))
    (d / "munge" / "key").chmod(0o400)
    shutil.chown(d / "munge", "munge", "munge")
    shutil.chown(d / "munge" / "key", "munge", "munge")
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    conf = d / "slurm.conf"
    conf.write_text(slurm_conf(d, socket.gethostname()))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    started: list[subprocess.Popen] = []
    logs = open(d / "daemons.log", "ab")
    try:
        m = d / "munge"
        started.append(subprocess.Popen(
            ["munged", "-F", f"--socket={m}/socket", f"--key-file={m}/key", f"--pid-file={m}/pid",
             f"--seed-file={m}/seed"], user="munge", stdout=logs, stderr=logs))
        time.sleep(0.5)
        for daemon in ("slurmctld", "slurmd"):
            started.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], stdout=logs,
                                            stderr=logs))
        deadline = time.time() + 60
        state = ""
        while time.time() < deadline and state != "idle":
            time.sleep(0.5)
            dead = [p.args[0] for p in started if p.poll() is not None]
            if dead:
                pytest.skip(f"{', '.join(dead)} stopped at start: {(d / 'daemons.log').read_text()[-500:]}")
            try:
                state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                       text=True, timeout=20).stdout.strip()
            except subprocess.TimeoutExpired:
                state = "no answer"
        if state != "idle":
            pytest.skip(f"the node did not become idle within 60 s (sinfo: {state!r})")
        yield conf
    finally:
        if len(started) == 3:  # let the cluster's jobs end (a step outlives its result file)
            subprocess.run(["scancel", "--full", f"--user={os.getuid()}"], capture_output=True,
                           timeout=20)
            deadline = time.time() + 30
            while time.time() < deadline and subprocess.run(
                    ["squeue", "-h"], capture_output=True, text=True, timeout=20).stdout.strip():
                time.sleep(0.5)
        for p in reversed(started):  # only the daemons this fixture started, by their pids
            p.terminate()
        for p in started:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()
        shutil.rmtree(d, ignore_errors=True)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def sweep() -> list[train.RunConfig]:
    return [train.RunConfig("F1", 8, (1.0, -0.9), (0.5, 0.5), k, "sym_bal", 1e-2, 1e-2, 300, 1,
                            30, experiments.checkpoint_steps(300, "quick")) for k in (3, 4, 5, 6)]


def test_a_sweep_through_slurm_writes_the_inline_entries(slurm, tmp_path, monkeypatch):
    """`--executor slurm`: the sweep's chunks run as one job array on the cluster and write the
    cache entries inline computation writes, byte for byte."""
    configs = sweep()
    inline = Cache(tmp_path / "inline", "v")
    experiments.train_sweep(configs, inline, lambda it, **kw: it, chunk_size=2)
    ex = engine.parse("slurm", {"partition": "debug", "time": 5, "options": {"comment": "rnnbook-test"}})
    monkeypatch.setenv(engine.ENV, engine.to_env(ex))
    cluster = Cache(tmp_path / "slurm", "v")
    experiments.train_sweep(configs, cluster, lambda it, **kw: it, chunk_size=2)
    assert cluster.misses == 4
    script = next((tmp_path / "slurm" / "jobs").glob("*_submission.sh")).read_text()
    assert "#SBATCH --array=0-1%2" in script and "#SBATCH --partition=debug" in script
    assert "#SBATCH --comment=rnnbook-test" in script
    for c in configs:
        assert inline.path("linear", c.__dict__).read_bytes() == cluster.path("linear", c.__dict__).read_bytes()


def broken(configs):
    raise RuntimeError("no such teacher")


def test_a_failing_slurm_job_names_its_id_and_log(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv(engine.ENV, engine.to_env(engine.parse("slurm", {"time": 5}, retries=0)))
    with pytest.raises(engine.JobFailed, match=r"(?s)job \d+ failed \(1 attempts\); log: .*no such teacher"):
        Cache(tmp_path, "v").cached_batch("bad", [{"i": 0}], broken)
