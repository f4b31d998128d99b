# SPDX-License-Identifier: Apache-2.0
"""Fuzz lib/'s program loader and executor (tests/fuzz/pte_fuzzer) for a while.

Builds tests/fuzz with clang (libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer),
makes the seed corpus (et-export's hello and kws programs, tests/lib's affine_relu and
missing_op programs, tests/fuzz/regressions), replays the regression inputs, runs
libFuzzer in fork mode with --jobs processes for --seconds (or until --runs executions)
and prints executions, exec/s, coverage (libFuzzer's cov: edges and ft: features),
corpus size and findings. Exits 1 on any finding (its inputs are kept in the
artifacts folder, to go to tests/fuzz/regressions once fixed).

Without CMSIS-NN the Cortex-M programs (hello, kws) stop at init with
ET_ZEPHYR_ERR_OPERATOR_MISSING (load, plan validation, operator resolution), and only
the portable programs run to the end. With --cmsis-nn DIR --executorch-src DIR (a west
workspace's modules/lib/cmsis-nn and modules/lib/executorch), ExecuTorch's cortex_m
operators and CMSIS-NN's portable C are compiled for the host with the sanitizers and
registered, so hello and kws run too.

Example: python3 benchmarks/fuzz.py --seconds 600 --jobs 2
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FUZZ_SRC = REPO / "tests" / "fuzz"
REGRESSIONS = FUZZ_SRC / "regressions"

_FORK_LINE = re.compile(
    r"#(\d+): cov: (\d+) ft: (\d+) corp: (\d+) exec/s:? (\d+) oom/timeout/crash: (\d+)/(\d+)/(\d+)"
)
_PLAIN_LINE = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")


@dataclass
class Figures:
    executions: int = 0
    exec_per_s: int = 0
    cov: int = 0
    ft: int = 0
    corpus: int = 0
    ooms: int = 0
    timeouts: int = 0
    crashes: int = 0
    artifacts: int = 0

    @property
    def findings(self) -> int:
        # Each finding is counted by libFuzzer and leaves an artifact: not twice.
        return max(self.ooms + self.timeouts + self.crashes, self.artifacts)


def export_seeds(out: Path, kws_pte: Path | None = None) -> dict[str, Path]:
    """The seed programs: hello and kws from et-export, affine_relu and missing_op."""
    out.mkdir(parents=True, exist_ok=True)
    seeds: dict[str, Path] = {}
    fixtures = out / "fixtures"
    if not (fixtures / "affine_relu.pte").exists():
        gen = REPO / "tests" / "lib" / "gen_fixtures.py"
        subprocess.run([sys.executable, str(gen), str(fixtures)], check=True)
    seeds["affine_relu"] = fixtures / "affine_relu.pte"
    seeds["missing_op"] = fixtures / "missing_op.pte"
    for name in ("hello", "kws"):
        pte = out / name / f"{name}.pte"
        if name == "kws" and kws_pte is not None and kws_pte.exists():
            pte = kws_pte
        elif not pte.exists():
            model = f"samples/{name}/model.py:{name}"
            command = ["et-export", model, "--name", name, "-o", str(out / name)]
            subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        seeds[name] = pte
    return seeds


def generate_kernels(seeds: dict[str, Path], executorch_src: Path, out: Path) -> Path:
    """et_zephyr_gen.py's registration and source list for the Cortex-M programs' operators."""
    operators: dict[str, object] = {}
    for name in ("hello", "kws"):
        ops_yaml = seeds[name].with_suffix(".ops.yaml")
        operators.update((yaml.safe_load(ops_yaml.read_text()) or {}).get("operators") or {})
    out.mkdir(parents=True, exist_ok=True)
    union = out / "union.ops.yaml"
    union.write_text(yaml.safe_dump({"operators": operators}))
    gen = REPO / "zephyr" / "cmake" / "et_zephyr_gen.py"
    command = [sys.executable, str(gen), "--pte", str(seeds["kws"]), "--name", "kws"]
    command += ["--ops-yaml", str(union), "--schemas", str(seeds["kws"].with_suffix(""))]
    command[-1] += ".schemas.yaml"
    command += ["--executorch-dir", str(executorch_src), "--isa", "mve", "--out-dir", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def build(build_dir: Path, extra: list[str] | None = None) -> Path:
    """Configure and build tests/fuzz with clang; returns the build folder."""
    command = ["cmake", "-S", str(FUZZ_SRC), "-B", str(build_dir)]
    if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
        command += ["-G", "Ninja"]
    command += ["-DCMAKE_C_COMPILER=clang", "-DCMAKE_CXX_COMPILER=clang++", *(extra or [])]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir)], check=True, stdout=subprocess.DEVNULL)
    return build_dir


def replay(fuzzer: Path, inputs: list[Path]) -> subprocess.CompletedProcess[str]:
    """Run the fuzz target once on each input (regression inputs must not crash)."""
    return subprocess.run(
        [str(fuzzer), *map(str, inputs)], capture_output=True, text=True, timeout=600
    )


def in_wheel(fuzzer: Path, artifact: Path) -> bool:
    """True when @p artifact's crash is in the executorch wheel's own code (tests/fuzz/known):
    a runtime ET_CHECK abort, or a fault whose first frame outside libc is the wheel's."""
    env = dict(os.environ, ET_ZEPHYR_FUZZ_LOG="1")
    result = subprocess.run(
        [str(fuzzer), str(artifact)], capture_output=True, text=True, env=env, timeout=300
    )
    out = result.stdout + result.stderr
    if "[executorch F]" in out:
        return True
    for line in out.splitlines():
        frame = line.strip()
        if not re.match(r"#\d+ 0x", frame) or "libc.so" in frame or "__interceptor" in frame:
            continue
        if "string/../sysdeps" in frame:
            continue
        return "_portable_lib" in frame or "libqnn_executorch_backend" in frame
    return False


def parse(log: str, artifacts: Path) -> Figures:
    figures = Figures()
    for match in _FORK_LINE.finditer(log):
        values = [int(v) for v in match.groups()]
        figures.executions, figures.cov, figures.ft, figures.corpus = values[:4]
        figures.exec_per_s, figures.ooms, figures.timeouts, figures.crashes = values[4:]
    if not figures.executions:
        for match in _PLAIN_LINE.finditer(log):
            figures.executions, figures.cov, figures.ft, figures.corpus = map(int, match.groups())
        done = re.search(r"Done (\d+) runs in (\d+) second", log)
        if done:
            figures.executions = int(done.group(1))
            figures.exec_per_s = int(done.group(1)) // max(1, int(done.group(2)))
    figures.artifacts = sum(
        1
        for p in artifacts.glob("*")
        if p.name.split("-")[0] in ("crash", "leak", "timeout", "oom")
    )
    return figures


def fuzz(
    fuzzer: Path,
    corpus: Path,
    seeds: list[Path],
    artifacts: Path,
    seconds: int,
    jobs: int,
    runs: int = 0,
    seed: int = 0,
) -> tuple[Figures, str]:
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    seed_dir = artifacts.parent / "seeds"
    shutil.rmtree(seed_dir, ignore_errors=True)
    seed_dir.mkdir(parents=True)
    for program in seeds:
        shutil.copy(program, seed_dir / program.name)
    command = [str(fuzzer), f"-max_total_time={seconds}", "-print_final_stats=1"]
    command += [f"-artifact_prefix={artifacts}/", "-timeout=25", "-rss_limit_mb=4096"]
    if jobs > 1:
        command += [f"-fork={jobs}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    if runs:
        command.append(f"-runs={runs}")
    if seed:
        command.append(f"-seed={seed}")
    command += [str(corpus), str(seed_dir)]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0")
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=seconds + 600)
    log = result.stdout + result.stderr
    figures = parse(log, artifacts)
    elapsed = time.monotonic() - start
    if figures.executions and elapsed > 0:
        figures.exec_per_s = int(figures.executions / elapsed)
    if result.returncode != 0 and not figures.findings:
        figures.crashes = 1
    return figures, log


def table(figures: Figures, seconds: int, jobs: int) -> str:
    rows = [
        ("executions", f"{figures.executions:,}"),
        ("exec/s (all jobs)", f"{figures.exec_per_s:,}"),
        ("time", f"{seconds} s x {jobs} job(s)"),
        ("coverage (cov: edges)", f"{figures.cov:,}"),
        ("features (ft:)", f"{figures.ft:,}"),
        ("corpus", f"{figures.corpus:,} inputs"),
        (
            "findings",
            f"{figures.findings} (crash {figures.crashes}, timeout {figures.timeouts}, "
            f"oom {figures.ooms}, artifacts {figures.artifacts})",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=int, default=600, help="fuzzing time (default 600)")
    parser.add_argument("--runs", type=int, default=0, help="stop after this many executions")
    parser.add_argument("--jobs", type=int, default=2, help="fuzzing processes (default 2)")
    parser.add_argument(
        "--work-dir", type=Path, default=REPO / "build" / "fuzz", help="build, corpus, artifacts"
    )
    parser.add_argument("--cmsis-nn", type=Path, help="CMSIS-NN source tree (modules/lib/cmsis-nn)")
    parser.add_argument(
        "--executorch-src", type=Path, help="ExecuTorch source tree (modules/lib/executorch)"
    )
    args = parser.parse_args(argv)
    if (args.cmsis_nn is None) != (args.executorch_src is None):
        parser.error("--cmsis-nn and --executorch-src go together")

    work: Path = args.work_dir
    seeds = export_seeds(work / "programs", REPO / "build" / "et" / "kws" / "kws.pte")
    extra: list[str] = []
    flavour = "portable kernels (Cortex-M programs: init only)"
    if args.cmsis_nn is not None:
        gen = generate_kernels(seeds, args.executorch_src, work / "kernels")
        extra = [
            f"-DET_ZEPHYR_FUZZ_GEN_DIR={gen}",
            f"-DET_ZEPHYR_EXECUTORCH_SRC={args.executorch_src}",
            f"-DET_ZEPHYR_CMSIS_NN_DIR={args.cmsis_nn}",
        ]
        flavour = "portable + Cortex-M kernels (CMSIS-NN portable C)"
    build_dir = build(work / ("build-cmsis-nn" if extra else "build"), extra)
    fuzzer = build_dir / "pte_fuzzer"

    regressions = sorted(REGRESSIONS.glob("*.pte"))
    replayed = replay(fuzzer, regressions)
    if replayed.returncode != 0:
        print(replayed.stdout + replayed.stderr, file=sys.stderr)
        print(f"fuzz: a regression input of {REGRESSIONS} fails", file=sys.stderr)
        return 1

    corpus = work / ("corpus-cmsis-nn" if extra else "corpus")
    artifacts = work / "artifacts"
    figures, log = fuzz(
        fuzzer,
        corpus,
        [*seeds.values(), *regressions],
        artifacts,
        args.seconds,
        args.jobs,
        args.runs,
    )
    (work / "fuzz.log").write_text(log)
    print(f"fuzz: pte_fuzzer, {flavour}; seeds {', '.join(seeds)} + {len(regressions)} regressions")
    print(table(figures, args.seconds, args.jobs))
    if figures.findings:
        print(f"fuzz: findings in {artifacts} (log {work / 'fuzz.log'})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
