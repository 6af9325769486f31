"""Adversarial argument lists and input files for the commands beyond ``predict``: ``sweep`` grids and
problem tables, ``tune``, ``rank-check`` CSVs, ``resources`` / ``check`` build inputs, kernel sequence
YAMLs, ``compare``, ``schema``, ``calibrate`` arguments and strict ``--json`` / ``--csv`` output.

``cases(workdir)`` writes the hostile files under ``workdir`` and returns every case (a name and an
argument list); ``python tests/fuzz_corpus.py [N]`` runs them (or every N-th) in forked children with a
time bound and prints each broken promise. The CI test runs a fixed slice (tests/test_fuzz_explore.py).
Cases that would start a simulation keep it tiny (small problems on v100 / h100), so each runs in well
under the bound.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "sequences"
ABLATIONS = Path(__file__).resolve().parent.parent / "data" / "measurements" / "ablations.csv"

HOSTILE_VALUES = [
    "0", "-1", "-64", "1e999", "-1e999", ".nan", ".inf", "-.inf", "nan", "inf", "1e12", "10**400",
    "2.0**10000", "abc", "[1, 2]", "{a: 1}", "true", "null", "~", "''", "'\x00'", "\ufeff1", "64.5",
    "1/0", "!!float x", "&a 1", "*a", "9" * 5000, "é", "\U0001f600", "x" * 300, "1,,2", ",", " ",
]  # fmt: skip
HOSTILE_KEYS = ["", " ", "BM BN", "é", "x" * 5000, "M\nN", "=", "..", "K=K", "\x00"]


def _write(workdir: Path, name: str, content: str | bytes) -> str:
    path = workdir / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def _files(workdir: Path) -> dict[str, str]:
    """Hostile input files shared by several commands."""
    deep = "a: " + "[" * 3000 + "]" * 3000 + "\n"
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    header = ABLATIONS.read_text(encoding="utf-8").splitlines()[0] if ABLATIONS.exists() else "source"
    files = {
        "empty": _write(workdir, "empty.csv", ""),
        "binary": _write(workdir, "binary.csv", bytes(range(256)) * 8),
        "latin1": _write(workdir, "latin1.csv", "M,N\n\xe9\xe8,1\n".encode("latin-1")),
        "deep": _write(workdir, "deep.yaml", deep),
        "bomb": _write(workdir, "bomb.yaml", "\n".join(bomb) + "\n"),
        "scalar_yaml": _write(workdir, "scalar.yaml", "42\n"),
        "list_yaml": _write(workdir, "list.yaml", "- 1\n- 2\n"),
        "header_only": _write(workdir, "header_only.csv", header + "\n"),
        "dir": str(workdir),
        "missing": str(workdir / "missing.csv"),
        "devzero": "/dev/zero",
        "devnull": "/dev/null",
        "huge_field": _write(workdir, "huge_field.csv", "M,N,K\n" + "1" * 200_000 + ",1,1\n"),
        "problems_bad": _write(workdir, "problems_bad.csv", "M,N,K,dtype\n-1,0,.nan,zz\nabc,1e999,[1],bf16\n"),
        "problems_ragged": _write(workdir, "problems_ragged.csv", "M,N\n1,2,3,4\n"),
        "problems_dup": _write(workdir, "problems_dup.csv", "M,M,N\n128,256,128\n"),
        "problems_bom": _write(workdir, "problems_bom.csv", "\ufeffM,N,K\n128,128,64\n"),
        "problems_many": _write(workdir, "problems_many.csv", "M\n" + "\n".join(str(i) for i in range(1, 100_002))),
        "problems_unknown": _write(workdir, "problems_unknown.csv", "ZZZ\n1\n"),
    }  # fmt: skip
    return files


def _rank_files(workdir: Path) -> list[str]:
    if not ABLATIONS.exists():
        return []
    lines = ABLATIONS.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], lines[1:3]
    edits = [
        ("nan_value", lambda r: r.replace(",throughput,999,", ",throughput,nan,")),
        ("inf_value", lambda r: r.replace(",throughput,999,", ",throughput,inf,")),
        ("neg_value", lambda r: r.replace(",throughput,999,", ",throughput,-5,")),
        ("zero_value", lambda r: r.replace(",throughput,999,", ",throughput,0,")),
        ("bad_metric", lambda r: r.replace(",throughput,", ",speed,")),
        ("bad_unit", lambda r: r.replace(",TFLOPS,", ",parsecs,")),
        ("bad_arch", lambda r: r.replace(",h800,", ",h10,")),
        ("bad_schedule", lambda r: r.replace(",gemm_fp8_deepgemm,", ",../../etc/passwd,")),
        ("bad_params", lambda r: r.replace("BLOCK_M=128;", "BLOCK_M=1e999;ZZ;=;")),
        ("huge_m", lambda r: r.replace(",4096,24576,1536,", ",10000000000,24576,1536,")),
        ("neg_m", lambda r: r.replace(",4096,24576,1536,", ",-4096,24576,1536,")),
        ("empty_ablation", lambda r: r.rsplit(",", 1)[0] + ","),
        ("unicode_ablation", lambda r: r.rsplit(",", 1)[0] + ",\U0001f600" * 3),
    ]
    out = []
    for name, edit in edits:
        text = header + "\n" + "\n".join(edit(r) for r in rows) + "\n"
        out.append(_write(workdir, f"rank_{name}.csv", text))
    out.append(_write(workdir, "rank_no_ablation_col.csv", ",".join(header.split(",")[:-1]) + "\n"))
    out.append(_write(workdir, "rank_one_row.csv", header + "\n" + rows[0] + "\n"))
    return out


def _sequences(workdir: Path) -> list[str]:
    base = (EXAMPLES / "fa2_backward.yaml").read_text(encoding="utf-8") if EXAMPLES.exists() else ""
    edits = [
        ("no_kernels", "kernels:", "kernelz:"),
        ("empty_kernels", "kernels:\n", "kernels: []\nunused:\n"),
        ("bad_schedule", "schedule: attn_fa2_bwd", "schedule: nope"),
        ("self_ref", "schedule: attn_fa2_bwd", f"schedule: {workdir / 'seq_self_ref.yaml'}"),
        ("nan_problem", "batch: 4", "batch: .nan"),
        ("neg_problem", "batch: 4", "batch: -4"),
        ("huge_problem", "seqlen: 4096", "seqlen: 1e15"),
        ("expr_bomb", "batch: batch,", "batch: 10**10**10,"),
        ("unknown_symbol", "heads: heads,", "heads: nobody,"),
        ("set_list", "set: {batch: batch,", "set: [1, 2]\n  x: {batch: batch,"),
        ("bad_arch", "arch: a100", "arch: h10"),
        ("arch_list", "arch: a100", "arch: [a100]"),
        ("name_unicode", "name: main", "name: \U0001f600"),
        ("dup_name", "name: convert_dq", "name: main"),
        ("problem_scalar", "problem: {", "problem: 5\nx: {"),
    ]
    out = []
    for name, old, new in edits:
        out.append(_write(workdir, f"seq_{name}.yaml", base.replace(old, new, 1)))
    many = "sequence: many\narch: v100\nkernels:\n" + "".join(
        f"- {{name: k{i}, schedule: gemm_sync, set: {{M: 128, N: 128, K: 32}}}}\n" for i in range(5000)
    )
    out.append(_write(workdir, "seq_many.yaml", many))
    out.append(_write(workdir, "seq_bomb.yaml", "sequence: b\nkernels:\n" + "\n".join(
        "  " + line for line in ["- a0: &a0 [x, x, x, x, x, x, x, x]"] +
        [f"- a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 8) + "]" for i in range(1, 9)]) + "\n"))  # fmt: skip
    return out


def cases(workdir: Path) -> list[tuple[str, list[str]]]:
    """Every case: (name, gpusim argument list)."""
    f = _files(workdir)
    tiny = ["--set", "M=128", "--set", "N=128", "--set", "K=64"]
    out: list[tuple[str, list[str]]] = []

    def add(name: str, args: list[str]) -> None:
        out.append((name, args))

    sweep = ["sweep", "gemm_sync", "--arch", "v100", "-j", "1", "-q"]
    for value in HOSTILE_VALUES:
        add(f"sweep grid value {value[:20]!r}", [*sweep, "--grid", f"BM={value}", *tiny, "--json"])
        add(f"sweep range lo {value[:20]!r}", [*sweep, "--grid", f"BN={value}..128", *tiny])
        add(f"sweep range step {value[:20]!r}", [*sweep, "--grid", f"BN=64..128:{value}", *tiny])
        add(
            f"tune set {value[:20]!r}",
            ["tune", "auto:gemm", "--arch", "h10", "--set", f"M={value}", "--json"],
        )
        add(f"tune budget {value[:20]!r}", ["tune", "auto:gemm", "--budget", value, "--arch", "h10"])
        add(f"sweep top {value[:20]!r}", [*sweep, "--top", value, "--grid", "BM=64"])
        add(
            f"sweep jobs {value[:20]!r}",
            ["sweep", "gemm_sync", "--arch", "h10", "-j", value, "--grid", "BM=64"],
        )
        add(
            f"calibrate max-rows {value[:20]!r}",
            ["calibrate", f["missing"], "--arch", "v100", "--max-rows", value],
        )
        add(f"calibrate fit {value[:20]!r}", ["calibrate", f["missing"], "--arch", "v100", "--fit", value])
        for option in ("--cache", "--max-fit-events", "--max-iterations", "--jacobian"):
            add(
                f"calibrate {option[2:]} {value[:20]!r}",
                ["calibrate", f["missing"], "--arch", "v100", option, value],
            )
        add(f"compare vs {value[:20]!r}", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--vs", f"BM={value}",
                                            "--json"])  # fmt: skip
        add(f"compare set {value[:20]!r}", ["compare", "gemm_sync", "--arch", "v100", "--set", f"M={value}",
                                            "--set", "N=128", "--set", "K=64", "--csv"])  # fmt: skip
        add(f"resources threads {value[:20]!r}", ["resources", f["empty"], "--threads", value])
        add(f"resources maxrreg {value[:20]!r}", ["resources", f["empty"], "--maxrregcount", value])
        add(f"predict max-events {value[:20]!r}", ["predict", "gemm_sync", "--arch", "v100", *tiny, "--max-events",
                                                    value])  # fmt: skip
    for key in HOSTILE_KEYS:
        add(f"sweep key {key[:20]!r}", [*sweep, "--grid", f"{key}=1,2", *tiny])
        add(f"tune key {key[:20]!r}", ["tune", "auto:gemm", "--arch", "h100", "--set", f"{key}=1"])
        add(
            f"compare vs key {key[:20]!r}",
            ["compare", "gemm_sync", "--arch", "v100", *tiny, "--vs", f"{key}=1"],
        )
    grids = [
        "BM", "BM=", "=1", "BM=1..", "BM=..5", "BM=5..1", "BM=1..5..9", "BM=1..1000000000", "BM=1..10:0",
        "BM=1..10:-1", "BM=1.5..2.5:0.1", "BM=a..b", "BM=1..2:x", "BM=64,64", "BM=64,,128", "BM=1,2;3",
        "BM=.nan..1", "BM=1...3", "BM=0..0", "BM=-128..-64", "BM=1e308..1.7e308:1e300", "BM=0..1e-300:1e-308",
        "BM=10**10**10..1", "BM=[1,2]", "BM={a: 1}", "BM=64\nBN=2",
    ]  # fmt: skip
    for g in grids:
        add(f"sweep grid {g[:30]!r}", [*sweep, "--grid", g, *tiny, "--json"])
    big = [f"K{i}=" + ",".join(str(j) for j in range(1, 101)) for i in range(6)]
    add("sweep huge product", [*sweep, *(x for g in big for x in ("--grid", g)), "--json"])
    add("sweep huge axis", [*sweep, "--grid", "BM=1..99999", "--grid", "BN=1..99999", "--json"])
    add("sweep grid twice", [*sweep, "--grid", "BM=64", "--grid", "BM=128"])
    add("sweep set and grid", [*sweep, "--grid", "BM=64", "--set", "BM=64"])
    add("sweep unknown key", [*sweep, "--grid", "ZZZ=1,2", *tiny, "--json"])
    add("sweep unknown schedule", ["sweep", "nope", "--arch", "v100", "--grid", "BM=64"])
    add("sweep arch list bad", ["sweep", "gemm_sync", "--arch", "v100,,h10", "--grid", "BM=64"])
    add("sweep arch empty", ["sweep", "gemm_sync", "--arch", ",", "--grid", "BM=64"])
    add("sweep no grid", [*sweep, *tiny, "--json"])
    add("sweep ok json", [*sweep, "--grid", "BM=64,128", *tiny, "--json"])
    add("sweep ok table", [*sweep, "--grid", "BM=64,128", *tiny])
    for name, path in f.items():
        add(f"sweep problems {name}", [*sweep, "--problems", path, "--grid", "BM=64", "--json"])
        add(f"rank-check {name}", ["rank-check", path, "-j", "1", "--json"])
        add(f"calibrate {name}", ["calibrate", path, "--arch", "v100", "--dry-run", "--json", "-q"])
        add(f"resources {name}", ["resources", path, "--json"])
        add(f"check {name}", ["check", "gemm_sync", "--against", path, "--arch", "v100", "--json"])
        add(f"predict sequence/schedule {name}", ["predict", path, "--arch", "v100", *tiny, "--json"])
        add(f"compare schedule {name}", ["compare", path, "--arch", "v100", *tiny, "--json"])
        add(f"tune schedule {name}", ["tune", path, "--arch", "v100", "--json"])
        add(f"sweep schedule {name}", ["sweep", path, "--arch", "v100", "--grid", "BM=64", "-q"])
    outs = ["nodir/x.csv", "x.txt", "x", ".", "x.parquet/", "/dev/full", "/proc/x.csv", "x.CSV"]
    for o in outs:
        target = o if o.startswith("/") else str(workdir / o)
        add(f"sweep out {o}", [*sweep, "--grid", "BM=64", *tiny, "--out", target])
        add(f"sweep plot {o}", [*sweep, "--grid", "BM=64", *tiny, "--plot", target])
        add(f"tune out {o}", ["tune", "auto:gemm", "--arch", "h10", "--out", target])
        add(f"rank-check markdown {o}", ["rank-check", f["missing"], "--markdown", target])
        add(f"calibrate out {o}", ["calibrate", f["missing"], "--arch", "v100", "--out", target])
        add(
            f"compare plot {o}",
            ["compare", "gemm_sync", "--arch", "v100", *tiny, "--vs", "BM=64", "--plot", target],
        )
    add("sweep resume missing", [*sweep, "--grid", "BM=64", *tiny, "--resume"])
    add("sweep resume bad out", [*sweep, "--grid", "BM=64", *tiny, "--resume", "--out", f["binary"]])
    add(
        "sweep plot-kind bad",
        [*sweep, "--grid", "BM=64", *tiny, "--plot", str(workdir / "p.png"), "--plot-kind", "x"],
    )
    add("sweep heatmap one key", [*sweep, "--grid", "BM=64,128", *tiny, "--plot", str(workdir / "h.png"),
                                  "--plot-kind", "heatmap"])  # fmt: skip
    add("sweep scheduler bad", [*sweep, "--grid", "BM=64", "--scheduler", "tcp://256.1.1.1:99999"])
    add("sweep scheduler junk", [*sweep, "--grid", "BM=64", "--scheduler", "\x00"])
    add("tune scheduler junk", ["tune", "auto:gemm", "--arch", "h10", "--scheduler", "nope://"])
    for kernel in ["auto", "auto:gemm", "auto:attention", "auto:attn", "auto:zzz", "auto:", "gemm", "attention",
                   "stream", "gemm_fp8_deepgemm", "", "\U0001f600", "x" * 5000, "../schedules/gemm_sync"]:  # fmt: skip
        add(f"tune kernel {kernel[:20]!r}", ["tune", kernel, "--arch", "h10", "--json"])
        add(f"predict kernel {kernel[:20]!r}", ["predict", kernel, "--arch", "h10", "--json"])
    for attn_set in ["head_dim=0", "head_dim=-1", "causal=2", "causal=.nan", "seqlen_q=1e30", "batch=0", "dtype=int8",
                     "heads_kv=3", "BM=128", "M=128"]:  # fmt: skip
        small = ["--set", "batch=1", "--set", "heads=1", "--set", "seqlen_q=256"]
        add(f"tune attention {attn_set}", ["tune", "auto:attention", "--arch", "h100", "-j", "1", *small, "--set", attn_set,
                                           "--json"])  # fmt: skip
        add(
            f"predict auto:attention {attn_set}",
            ["predict", "auto:attention", "--arch", "h100", *small, "--set", attn_set],
        )
    for gemm_set in ["M=0", "K=-1", "dtype=fp4", "dtype=zz", "groups=0", "BN=128", "N=1e20", "M=.inf"]:
        add(f"predict auto:gemm {gemm_set}", ["predict", "auto:gemm", "--arch", "h100", *tiny, "--set", gemm_set,
                                              "--json"])  # fmt: skip
    for path in _rank_files(workdir):
        add(f"rank-check {Path(path).stem}", ["rank-check", path, "-j", "1", "--json"])
    for path in _sequences(workdir):
        add(
            f"sequence {Path(path).stem}",
            ["predict", path, "--arch", "a100", "--set", "seqlen=256", "--json"],
        )
        add(f"sequence {Path(path).stem} v100", ["predict", path, "--arch", "v100", "--set", "batch=0"])
    add(
        "sequence with trace",
        ["predict", str(EXAMPLES / "fa2_backward.yaml"), "--trace", str(workdir / "t.json")],
    )
    add("sequence set unknown", ["predict", str(EXAMPLES / "fa2_backward.yaml"), "--set", "ZZ=1", "--json"])
    add("sequence ok", ["predict", str(EXAMPLES / "fa2_backward.yaml"), "--set", "seqlen=256", "--json"])
    add("sequence set nan", ["predict", str(EXAMPLES / "fa2_backward.yaml"), "--set", "batch=.nan", "--json"])
    for extra in [["--json", "--csv"], ["x"], ["--json", "x"], ["--bogus"], ["--json", "--json"]]:
        add(f"schema {extra}", ["schema", *extra])
        add(f"compare flags {extra}", ["compare", "gemm_sync", "--arch", "v100", *tiny, *extra])
    add("compare json csv", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--json", "--csv"])
    add("predict json csv", ["predict", "gemm_sync", "--arch", "v100", *tiny, "--json", "--csv"])
    add("compare overlay dir", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--overlay", str(workdir)])
    add("compare overlay bomb", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--overlay", f["bomb"]])
    add("compare overlay deep", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--overlay", f["deep"]])
    add("compare datasheet overlay", ["compare", "gemm_sync", "--arch", "v100", *tiny, "--datasheet", "--overlay",
                                      f["list_yaml"]])  # fmt: skip
    add("compare many archs", ["compare", "gemm_sync", "--arch", ",".join(["h10"] * 1000)])
    add("compare no schedule", ["compare", "--arch", "v100"])
    add(
        "compare nan problem csv",
        ["compare", "gemm_sync", "--arch", "v100", *tiny[2:], "--set", "M=.nan", "--csv"],
    )
    add("resources bad arch", ["resources", f["empty"], "--arch", "sm_999"])
    add("resources bad include", ["resources", f["empty"], "-I", "\x00"])
    add("resources cu missing", ["resources", str(workdir / "x.cu"), "--json"])
    add("resources cu junk", ["resources", _write(workdir, "junk.cu", "int main( {"), "--json"])
    add(
        "resources ptxas junk",
        ["resources", _write(workdir, "junk.txt", "ptxas info    : Used -5 registers\n")],
    )
    add("resources ptxas huge", ["resources", _write(workdir, "huge.txt",
                                                     "ptxas info    : Used 99999999999999999999 registers\n")])  # fmt: skip
    add("check unknown schedule", ["check", "nope", "--against", f["empty"]])
    add("check bad set", ["check", "gemm_sync", "--against", f["empty"], "--set", "BM=.nan"])
    add("calibrate bad arch", ["calibrate", str(ABLATIONS), "--arch", "h10"])
    add("calibrate arch list", ["calibrate", str(ABLATIONS), "--arch", "h100,a100"])
    add("calibrate bad fit", ["calibrate", str(ABLATIONS), "--arch", "h800", "--fit", "nope", "--dry-run"])
    add(
        "calibrate no rows for arch",
        ["calibrate", str(ABLATIONS), "--arch", "v100", "--dry-run", "--json", "-q"],
    )
    add(
        "calibrate dry and out",
        ["calibrate", f["missing"], "--arch", "v100", "--dry-run", "--out", "/dev/full"],
    )
    small_stream = ["--set", "bytes=1048576"]
    for word in ["trid", "", "COPY", "copy;rm", "x" * 300, "1", "'triad'", "\x00", "[copy]"]:
        add(f"stream op {word[:20]!r}", ["predict", "stream", "--arch", "h100", *small_stream, "--set", f"op={word}",
                                         "--json"])  # fmt: skip
        add(f"deepgemm layout {word[:20]!r}", ["predict", "gemm_fp8_deepgemm", "--arch", "h800", "--set", "M=256",
                                               "--set", "N=256", "--set", "K=256", "--set", f"layout={word}"])  # fmt: skip
        add(f"deepgemm A_MAJOR {word[:20]!r}", ["predict", "gemm_fp8_deepgemm", "--arch", "h800", "--set", "M=256",
                                                "--set", "N=256", "--set", "K=256", "--set", f"A_MAJOR={word}",
                                                "--json"])  # fmt: skip
        add(f"deepgemm RASTER {word[:20]!r}", ["predict", "gemm_fp8_deepgemm", "--arch", "h800", "--set", "M=256",
                                               "--set", "N=256", "--set", "K=256", "--set", f"RASTER={word}"])  # fmt: skip
    for value in HOSTILE_VALUES[::3]:
        add(f"stream_l2 bytes {value[:20]!r}", ["predict", "stream_l2", "--arch", "h100", "--set",
                                                f"bytes={value}", "--json"])  # fmt: skip
        add(f"stream_l2 BLOCKS {value[:20]!r}", ["predict", "stream_l2", "--arch", "h100", "--set",
                                                 f"BLOCKS={value}", "--json"])  # fmt: skip
        add(f"measure only {value[:20]!r}", ["measure", "--micro", "--list", "--only", value])
        add(f"measure target {value[:20]!r}", ["measure", "--micro", "--list", "--target", value])
    for extra in [["--only", "wgmma,,zz"], ["--only", "nope"], ["--target", "sm_90a", "--list"], ["--list"],
                  ["--build-dir", "/dev/full/x", "--list"], ["--out", "/proc/x.csv"], ["--only", "wgmma"],
                  ["--quick", "--micro", "--list"], ["--target", "sm_999", "--list"]]:  # fmt: skip
        add(f"measure micro {extra}", ["measure", "--micro", *extra])
    add("measure list without micro", ["measure", "--list"])
    for extra in [["--only", ",,"], ["--only", "x" * 300], ["--iters", "0"], ["--iters", "-1"], ["--iters", "1e99"],
                  ["--iters", "10000000000"], ["--out", "/proc/x.csv"], ["--out", f["dir"]], ["--out", "x.txt"],
                  ["--build-dir", "/dev/full/x"], ["--build-dir", f["devnull"]], ["--build-dir", ""],
                  ["--out", "/dev/full"]]:  # fmt: skip
        add(f"measure-kernels {extra[0]} {extra[1][:20]!r}", ["measure-kernels", *extra])
    add(
        "measure standard out missing dir",
        ["measure", "--out", str(Path(f["missing"]).parent / "no" / "x.csv")],
    )
    return out


def main() -> int:
    """Run the corpus (every N-th case from an offset with arguments N OFFSET); print each failure and
    the progress, return the failure count."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fuzzkit import problems, run_forked

    import gpusim.cli  # noqa: F401

    step = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    offset = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    timeout_s = float(os.environ.get("GPUSIM_FUZZ_TIMEOUT_S", "30"))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases(Path(tmp))[offset::step]
        for i, (name, args) in enumerate(all_cases):
            outcome = run_forked(args, timeout_s=timeout_s)
            found = problems(outcome)
            if i % 25 == 0:
                print(f"{i} cases run, {failures} failures", flush=True)
            if found:
                failures += 1
                print(f"FAIL {i} {name}: {found} rc={outcome.rc} {outcome.wall_s:.1f}s "
                      f"{outcome.stderr.strip()[-300:]!r}", flush=True)  # fmt: skip
        print(f"{len(all_cases)} cases, {failures} failures", flush=True)
    return failures


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
