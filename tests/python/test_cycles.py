# SPDX-License-Identifier: Apache-2.0
"""The cycle estimate (`et-size --cycles`) against the cycle counts the Technical Reference
Manuals state for short sequences.

Each snippet below is a sequence whose cycles a TRM gives (Cortex-M3 DDI 0337I and
Cortex-M4 DDI 0439B, Table 3-1 and 3.3.2 "Load/store timings"; Cortex-M0 DDI 0432C and
M0+ DDI 0484C, Table 3-1). The tests estimate them twice: from a listing and counts made
by hand (everywhere), and from the firmware itself, assembled with arm-none-eabi-gcc and
counted by the repository's counter under QEMU on mps2-an385 (M3) and mps2-an386 (M4),
where the counter's taken-branch column comes in.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import need_tools
from et_zephyr.errors import ExportError
from et_zephyr.size.cli import main as et_size_main
from et_zephyr.size.cycles import estimate, estimate_build, exception_handlers
from et_zephyr.size.disassembly import Instruction, disassemble, parse
from et_zephyr.size.instructions import read_histogram, read_taken
from et_zephyr.size.plugin import build_plugin
from et_zephyr.size.timing import BRANCH, CORES, register_count, timing_for

GCC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"


@dataclass(frozen=True)
class Snippet:
    name: str
    body: tuple[str, ...]
    # The TRM's cycles for the body, by core: exact, or (lowest, highest).
    cycles: dict[str, int | tuple[int, int]]


LOOPS = 10
SNIPPETS = (
    # 3.3.2: "LDR R0,[R1]; LDR R1,[R2] - normally three cycles total".
    Snippet("two_loads", ("ldr r0, [r1]", "ldr r1, [r2]"), {"Cortex-M3": 3, "Cortex-M4": 3}),
    # "LDR R0,[R1,R2]; STR R0,[R3,#20] - normally three cycles total".
    Snippet(
        "load_store_immediate",
        ("ldr r0, [r1, r2]", "str r0, [r3, #20]"),
        {"Cortex-M3": 3, "Cortex-M4": 3},
    ),
    # "LDR R0,[R1,R2]; STR R1,[R3,R2] - normally three cycles total".
    Snippet(
        "load_store_register",
        ("ldr r0, [r1, r2]", "str r1, [r3, r2]"),
        {"Cortex-M3": 3, "Cortex-M4": 3},
    ),
    # "LDR R0,[R1,R5]; LDR R1,[R2]; LDR R2,[R3,#4] - normally four cycles total".
    Snippet(
        "three_loads",
        ("ldr r0, [r1, r5]", "ldr r1, [r2]", "ldr r2, [r3, #4]"),
        {"Cortex-M3": 4, "Cortex-M4": 4},
    ),
    # "Any load or store that generates an address dependent on the result of a preceding
    # data processing operation will stall the pipeline for an additional cycle": 1 + 2 + 1.
    Snippet("address_stall", ("adds r1, r1, #0", "ldr r0, [r1]"), {"Cortex-M3": 4, "Cortex-M4": 4}),
    # Table 3-1: MLA 2 on the M3, 1 on the M4; SMULL 3 to 5 on the M3, 1 on the M4.
    Snippet("multiply_accumulate", ("mla r0, r1, r2, r3",), {"Cortex-M3": 2, "Cortex-M4": 1}),
    Snippet("long_multiply", ("smull r0, r6, r2, r3",), {"Cortex-M3": (3, 5), "Cortex-M4": 1}),
    # LDRD: 1 + N with N = 2; PUSH and POP: 1 + N (6 + 5 + 2).
    Snippet("load_double", ("ldrd r0, r6, [r2]",), {"Cortex-M3": 3, "Cortex-M4": 3}),
    Snippet(
        "push_pop",
        ("push {r4, r5, r6, r7, lr}", "pop {r4, r5, r6, r7}", "pop {r0}"),
        {"Cortex-M0": 13, "Cortex-M0+": 13, "Cortex-M3": 13, "Cortex-M4": 13},
    ),
    # A loop of LOOPS: SUBS 1 each time, BNE 1 + P when taken (LOOPS - 1 times) and 1 the
    # last time, P a refill of 1 to 3 cycles (M3, M4), 2 (M0: B<cc> 3) or 1 (M0+: 2).
    Snippet(
        "count_down",
        ("movs r0, #10", "1: subs r0, r0, #1", "bne 1b"),
        {
            "Cortex-M0": 1 + LOOPS + (LOOPS - 1) * 3 + 1,
            "Cortex-M0+": 1 + LOOPS + (LOOPS - 1) * 2 + 1,
            "Cortex-M3": (1 + LOOPS + (LOOPS - 1) * 2 + 1, 1 + LOOPS + (LOOPS - 1) * 4 + 1),
            "Cortex-M4": (1 + LOOPS + (LOOPS - 1) * 2 + 1, 1 + LOOPS + (LOOPS - 1) * 4 + 1),
        },
    ),
)


def _listing(snippet: Snippet) -> dict[int, Instruction]:
    """The snippet in objdump's format, as the assembler would size it (the encodings
    themselves are not read)."""
    lines, address, labels = [], 0x100, {}
    for text in snippet.body:
        label, _, instruction = text.rpartition(": ")
        mnemonic, _, operands = instruction.partition(" ")
        wide = mnemonic in ("mla", "smull", "ldrd")
        if label:
            labels[label + "b"] = address
        operands = re.sub(r"\b\d+b\b", lambda m: f"{labels[m.group(0)]:x}", operands)
        raw = "f8d0 3004" if wide else "4770"
        lines.append(f"  {address:x}:\t{raw} \t{mnemonic}\t{operands}")
        address += 4 if wide else 2
    return parse("\n".join(lines))


def _hand_counts(snippet: Snippet, listing: dict[int, Instruction]) -> tuple[dict, dict]:
    """Each instruction runs once, but the loop's, which runs LOOPS times; its branch is
    taken each time but the last."""
    counts, taken = {}, {}
    in_loop = False
    for text, address in zip(snippet.body, sorted(listing), strict=True):
        in_loop = in_loop or text.startswith("1: ")
        counts[address] = LOOPS if in_loop else 1
        if text.startswith("bne"):
            taken[address] = LOOPS - 1
    return counts, taken


def _check(core: str, expected: int | tuple[int, int], low: float, mid: float, high: float):
    if isinstance(expected, int):
        assert (low, mid, high) == (expected, expected, expected)
    else:
        assert (low, high) == expected
        assert mid == sum(expected) / 2


@pytest.mark.parametrize(
    ("snippet", "core"),
    [(s, c) for s in SNIPPETS for c in s.cycles],
    ids=[f"{s.name}-{c}" for s in SNIPPETS for c in s.cycles],
)
def test_the_estimate_of_a_listing_is_the_trm_count(snippet: Snippet, core: str) -> None:
    listing = _listing(snippet)
    counts, taken = _hand_counts(snippet, listing)
    result = estimate(CORES[core], counts, taken, listing)
    _check(core, snippet.cycles[core], result.total.low, result.total.mid, result.total.high)


def test_mnemonics_lose_their_suffixes_not_their_names() -> None:
    known = CORES["Cortex-M4"].known
    names = {
        "bls": "b", "bhs.n": "b", "bl": "bl", "bleq": "bl", "muls": "mul", "mls": "mls",
        "lsls": "lsl", "movs": "mov", "movseq.w": "mov", "subscs.w": "sub", "teq": "teq",
        "teqne": "teq", "ldrhhi": "ldrh", "bics": "bic", "smlals": "smlal", "ittet": "ittet",
        "vcvt.s32.f32": "vcvt", "vmla.f32": "vmla", "popgt": "pop", "cbnz": "cbnz",
    }  # fmt: skip
    for mnemonic, base in names.items():
        assert Instruction(0, 2, mnemonic, "").base(known) == base, mnemonic


def test_register_lists_count_each_word() -> None:
    assert register_count("{r4, r5, r6, r7, lr}") == 5
    assert register_count("sp!, {r4-r11, lr}") == 9
    assert register_count("{d8-d15}") == 16
    assert register_count("{s16-s31}") == 16


def test_branches_and_loads_of_the_pc_refill_the_pipeline() -> None:
    listing = parse(
        "\n".join(
            [
                "     100:\te8bd 80f0 \tpop.w\t{r4, r5, r6, r7, pc}",
                "     104:\tf8d1 f000 \tldr.w\tpc, [r1]",
                "     108:\t4770      \tbx\tlr",
                "     10a:\t46f7      \tmov\tpc, lr",
            ]
        )
    )
    m4, m0 = CORES["Cortex-M4"], CORES["Cortex-M0"]
    pop, load, bx, mov = (listing[a] for a in (0x100, 0x104, 0x108, 0x10A))
    assert all(m4.cost(i).kind == BRANCH for i in (pop, load, bx, mov))
    counts = {0x100: 1}
    # POP {.., pc}: 1 + N + P on the M4 (N = 5), 4 + N on the M0.
    assert estimate(m4, counts, {0x100: 1}, listing).total.low == 1 + 5 + 1
    assert estimate(m4, counts, {0x100: 1}, listing).total.high == 1 + 5 + 3
    m0_pop = parse("     100:\tbdf0      \tpop\t{r4, r5, r6, r7, pc}")
    assert estimate(m0, counts, {0x100: 1}, m0_pop).total.mid == 4 + 5


def test_cores_without_published_timings_get_no_estimate() -> None:
    for core in ("Cortex-M7", "Cortex-M33", "Cortex-M55"):
        with pytest.raises(ExportError, match=f"no cycle estimate for the {core}: "):
            timing_for(core)


def test_an_exception_costs_its_entry_and_return() -> None:
    listing = parse("     100:\tdf00      \tsvc\t0\n     200:\t4770      \tbx\tlr")
    counts = {0x100: 3, 0x200: 3}
    m3 = estimate(CORES["Cortex-M3"], counts, {0x200: 3}, listing, {0x200})
    # SVC has no cycles of its own: each entry costs 12 and its return as much; BX LR 1 + P.
    entries, spent = m3.by_class["exception entry and return"]
    assert (entries, spent.mid) == (3, 3 * 24)
    assert (m3.total.low, m3.total.high) == (3 * 24 + 3 * (1 + 1), 3 * 24 + 3 * (1 + 3))


# The snippets assembled, linked and counted under QEMU.

PROGRAM_HEAD = """\
    .syntax unified
    .cpu {cpu}
    .thumb
    .section .vectors, "a"
    .global _vector_table
_vector_table:
    .word 0x20004000
    .word reset
    .rept 9
    .word hang
    .endr
    .word svc_handler
    .rept 4
    .word hang
    .endr
    .size _vector_table, . - _vector_table
    .text
    .type reset, %function
    .thumb_func
reset:
    .global snippets
snippets:
"""

PROGRAM_TAIL = """\
    .global snippets_end
snippets_end:
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    .ltorg
    .type svc_handler, %function
    .thumb_func
svc_handler:
    bx lr
    .type hang, %function
    .thumb_func
hang:
    b hang
"""

# Before each snippet: its address registers at RAM, and a NOP so that nothing before it
# overlaps or stalls its first instruction.
SETUP = """\
    ldr r1, =0x20000000
    ldr r2, =0x20000000
    ldr r3, =0x20000000
    movs r5, #0
    nop
"""


def _program(cpu: str, snippets: tuple[Snippet, ...]) -> str:
    parts = [PROGRAM_HEAD.format(cpu=cpu)]
    for snippet in snippets:
        parts.append(SETUP)
        parts.append(f"    .global {snippet.name}\n{snippet.name}:\n")
        parts.extend(f"    {line}\n" for line in snippet.body)
        parts.append(f"    .global {snippet.name}_end\n{snippet.name}_end:\n    nop\n")
    parts.append("    svc 0\n")
    parts.append(PROGRAM_TAIL)
    return "".join(parts)


# The BBC micro:bit's nRF51 is a Cortex-M0 with 16 KiB of RAM (the stack's top above).
MACHINES = {
    "Cortex-M0": ("microbit", "cortex-m0"),
    "Cortex-M3": ("mps2-an385", "cortex-m3"),
    "Cortex-M4": ("mps2-an386", "cortex-m4"),
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_tools(QEMU, GCC, "cmake", "cc")
    return build_plugin(tmp_path_factory.mktemp("insn_count"))


def _build(out_dir: Path, core: str) -> tuple[Path, dict[str, int]]:
    cpu = MACHINES[core][1]
    out_dir.mkdir(parents=True, exist_ok=True)
    # The snippets the core runs: the M0's ARMv6-M has no Thumb-2 instructions.
    snippets = tuple(snippet for snippet in SNIPPETS if core in snippet.cycles)
    (out_dir / "program.S").write_text(_program(cpu, snippets))
    (out_dir / "link.ld").write_text(
        "MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 64K }\n"
        "SECTIONS { .text : { KEEP(*(.vectors)) *(.text*) } > FLASH }\n"
    )
    elf = out_dir / "zephyr.elf"
    subprocess.run(
        [GCC, f"-mcpu={cpu}", "-mthumb", "-nostdlib", "-x", "assembler-with-cpp", "program.S",
         "-T", "link.ld", f"-Wl,-Map={out_dir / 'zephyr.map'}", "-o", str(elf)],
        cwd=out_dir, check=True,
    )  # fmt: skip
    nm = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    names = {name: int(value, 16) for value, _, name in (line.split() for line in nm.splitlines())}
    return elf, names


def _count(plugin: Path, elf: Path, names: dict[str, int], core: str, hist: Path) -> None:
    machine, cpu = MACHINES[core]
    argv = [
        shutil.which(QEMU) or QEMU, "-machine", machine, "-cpu", cpu, "-display", "none",
        "-monitor", "none", "-serial", "null", "-semihosting-config", "enable=on,target=native",
        "-icount", "shift=0", "-kernel", str(elf), "-plugin",
        f"{plugin},start={names['snippets']:#x},end={names['snippets_end']:#x},hist={hist}",
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("core", list(MACHINES))
def test_the_counted_firmware_estimates_as_the_trm_says(
    plugin: Path, tmp_path: Path, core: str
) -> None:
    elf, names = _build(tmp_path / "zephyr", core)
    hist = tmp_path / "program.hist"
    _count(plugin, elf, names, core, hist)
    histogram, taken = read_histogram(hist), read_taken(hist)
    loop_branch = next(a for a, i in disassemble(elf).items() if i.mnemonic.startswith("bne"))
    # The counter's column: the loop's branch taken each time but the last.
    assert (histogram[loop_branch], taken[loop_branch]) == (LOOPS, LOOPS - 1)
    result = estimate(timing_for(core), histogram, taken, disassemble(elf), exception_handlers(elf))
    for snippet in SNIPPETS:
        if core not in snippet.cycles:
            continue
        span = range(names[snippet.name], names[f"{snippet.name}_end"])
        spent = [result.by_address[a] for a in span if a in result.by_address]
        low = sum(r.low for r in spent)
        mid = sum(r.mid for r in spent)
        high = sum(r.high for r in spent)
        _check(core, snippet.cycles[core], low, mid, high)


def test_et_size_prints_the_estimate_of_a_build(
    plugin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`et-size BUILD --instructions HIST --cycles` on a build folder laid out as Zephyr's
    (the ELF, map and .config under zephyr/): the core from .config, the SVC priced."""
    build = tmp_path / "build"
    elf, names = _build(build / "zephyr", "Cortex-M4")
    (build / "zephyr" / ".config").write_text("CONFIG_ARM=y\nCONFIG_CPU_CORTEX_M4=y\n")
    hist = tmp_path / "program.hist"
    _count(plugin, elf, names, "Cortex-M4", hist)
    assert et_size_main([str(build), "--instructions", str(hist), "--cycles"]) == 0
    printed = capsys.readouterr().out
    result = estimate_build(build, hist)
    assert f"estimated cycles (Cortex-M4, per inference): {round(result.total.mid):,}" in printed
    assert re.search(r"^exception entry and return\s+1\s+24\s", printed, re.MULTILINE)
    (build / "zephyr" / ".config").write_text("CONFIG_CPU_CORTEX_M33=y\n")
    assert et_size_main([str(build), "--instructions", str(hist), "--cycles"]) == 0
    assert "no cycle estimate for the Cortex-M33" in capsys.readouterr().out
