"""sonde.Timer in the ranks of a real torchrun job (Debian's torch): one profile
per rank, named by rank, under the job's run id, and `sonde show RUN` compares
them: rank 1 sleeps twice as long per step as rank 0."""
import json
import os
import shutil
import subprocess
import sys

import pytest

SCRIPT = """
import os, time, sonde
rank = int(os.environ["RANK"])
t = sonde.Timer()
for _ in range(5):
    with t.measure("step"):
        time.sleep(0.02 * (rank + 1))
print("wrote", sonde.Reporter(t).save_profile("timer.json"))
"""


def test_torchrun_ranks(tmp_path, sonde_bin):
    torchrun = shutil.which("torchrun")
    if not torchrun:
        pytest.skip("torchrun is not installed (python3-torch; scripts/install-deps installs it)")
    (tmp_path / "train.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), os.path.dirname(os.path.dirname(
            sys.modules["sonde"].__file__))) if p))
    if "address" in os.environ.get("SANITIZE", ""):
        # the ranks' interpreters load a sanitized binding: its runtimes first, as
        # tests/python/run preloads them for this one (the interpreter's leaks are its own)
        env["LD_PRELOAD"] = " ".join(
            subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                           text=True).stdout.strip() for lib in ("libasan.so", "libubsan.so"))
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    # Debian's torch 1.13 under Python 3.11 cannot read the default --redirects 0
    # and --tee 0 (an IntFlag of no bits no longer iterates): redirect stdout instead
    r = subprocess.run([torchrun, "--standalone", "--nproc_per_node", "2", "--redirects", "1",
                        "--tee", "1", "train.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    files = sorted(p.name for p in tmp_path.glob("timer*.json"))
    assert files == ["timer-rank0.json", "timer-rank1.json"], files
    docs = [json.loads((tmp_path / f).read_text()) for f in files]
    assert docs[0]["header"]["run_id"] == docs[1]["header"]["run_id"]
    jobs = [d["metadata"]["job"] for d in docs]
    assert [j["rank"] for j in jobs] == [0, 1]
    assert all(j["launcher"] == "torchrun" and j["size"] == 2 for j in jobs)
    run = docs[0]["header"]["run_id"]
    out = subprocess.run([sonde_bin, "show", run, "-f", "json"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    ranks = json.loads(out)
    assert ranks["launcher"] == "torchrun" and ranks["size"] == 2
    (col,) = ranks["collectors"]
    assert col["ranks"] == 2 and col["missing_ranks"] == []
    step = next(m for m in col["metrics"] if m["metric"] == "step")
    assert step["highest_rank"] == 1
    # each rank's mean step is its sleep (20 ms, 40 ms) or a little more
    assert 20e6 <= step["min"] < 30e6 and 40e6 <= step["max"] < 60e6, step
    assert step["imbalance"] == pytest.approx(step["max"] / ((step["min"] + step["max"]) / 2))
