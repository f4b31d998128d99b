# SPDX-License-Identifier: Apache-2.0
"""The instruction counter (tools/insn_count, a QEMU TCG plugin) on a tiny ARM program.

The program (assembly below, built with arm-none-eabi-gcc, run on QEMU's mps2-an385)
calls `counted` CALLS times from one call site; `counted` loops LOOPS times over five
instructions, one of them an MMIO load (SysTick's current value: I/O in the middle of a
block, which QEMU re-executes under -icount) and one an SVC whose handler runs one
instruction (an exception taken mid-block). One window, from `counted`'s entry to the
return site `after_call`, executes exactly 3 + 6 * LOOPS instructions: 3 + 5 * LOOPS in
`counted` and LOOPS in `svc_handler`. Semihosting's SYS_EXIT ends QEMU.

Built with TWO_CPUS, the program runs on QEMU's mps2-an521 (two Cortex-M33s) as Zephyr's
mps2/an521/cpu1 firmware does: CPU 0 points CPU 1 at the second vector table, releases it
and spins; CPU 1 makes the calls.

Needs qemu-system-arm, arm-none-eabi-gcc, cmake and a host C compiler; without them the
tests skip, except in CI (CI set), where they fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, need_tools  # noqa: F401  (puts scripts/ on sys.path)
from et_zephyr.errors import ExportError
from et_zephyr.size.cli import main as et_size_main
from et_zephyr.size.counting import count_instructions, read_windows
from et_zephyr.size.instructions import attribute, read_histogram
from et_zephyr.size.plugin import build_plugin
from et_zephyr.size.qemu import QemuCommand, parse_commands
from et_zephyr.size.window import Window, call_sites

GCC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"
TOOLS = (QEMU, GCC, "cmake", "cc")

PROGRAM = """\
    .syntax unified
    .cpu cortex-m3
    .thumb

    .macro vector_table stack, entry
    .word \\stack               /* initial stack pointer */
    .word \\entry
    .rept 9
    .word hang
    .endr
    .word svc_handler           /* exception 11: SVCall */
    .rept 4
    .word hang
    .endr
    .endm

    .section .vectors, "a"
#ifdef TWO_CPUS
    vector_table 0x38020000, start_cpu1
    .balign 128
cpu1_vectors:
    vector_table 0x38010000, reset
#else
    vector_table 0x20010000, reset
#endif

    .text
#ifdef TWO_CPUS
    .type start_cpu1, %function
    .thumb_func
start_cpu1:
    ldr r0, =0x50021114         /* SSE-200 INITSVTOR1: CPU 1's vector table */
    ldr r1, =cpu1_vectors
    str r1, [r0]
    ldr r0, =0x50021118         /* CPUWAIT: release CPU 1 */
    movs r1, #0
    str r1, [r0]
3:  adds r1, r1, #1
    b 3b
    .size start_cpu1, . - start_cpu1
#endif

    .type reset, %function
    .thumb_func
reset:
    movs r4, #CALLS
2:  ldr r0, =LOOPS
    bl counted
    .global after_call
after_call:
    subs r4, r4, #1
    bne 2b
#ifdef SPIN
    b .
#endif
    movs r0, #0x18              /* SYS_EXIT */
    ldr r1, =0x20026            /* ADP_Stopped_ApplicationExit: exit code 0 */
    bkpt 0xab
    .size reset, . - reset

    .type counted, %function
    .thumb_func
counted:
    ldr r3, =0xE000E018         /* SysTick current value: an MMIO load */
    movs r1, #0
1:  adds r1, r1, #1
    ldr r2, [r3]
    svc 0
    subs r0, r0, #1
    bne 1b
    bx lr
    .size counted, . - counted

    .type svc_handler, %function
    .thumb_func
svc_handler:
    bx lr
    .size svc_handler, . - svc_handler

    .type hang, %function
    .thumb_func
hang:
    b hang
    .size hang, . - hang
"""

LINKER_SCRIPT = """\
MEMORY
{
    FLASH (rx) : ORIGIN = ORIGIN_ADDRESS, LENGTH = 64K
}
SECTIONS
{
    .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > FLASH
}
"""

ICOUNT = {
    "no-icount": [],
    "icount-0": ["-icount", "shift=0"],
    # What Zephyr's QEMU boards pass (shift=7 on the MPS3 board).
    "icount-zephyr": ["-icount", "shift=4,align=off,sleep=off"],
}


def expected_per_window(loops: int) -> int:
    return 3 + 6 * loops


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_tools(*TOOLS)
    return build_plugin(tmp_path_factory.mktemp("insn_count"))


def build_program(
    out_dir: Path, loops: int, calls: int, *, spin: bool = False, two_cpus: bool = False
) -> Path:
    need_tools(*TOOLS)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "program.S").write_text(PROGRAM)
    # AN521 boots from its code memory's secure alias.
    origin = "0x10000000" if two_cpus else "0x00000000"
    (out_dir / "link.ld").write_text(LINKER_SCRIPT.replace("ORIGIN_ADDRESS", origin))
    elf = out_dir / "program.elf"
    subprocess.run(
        [GCC, "-mcpu=cortex-m3", "-mthumb", "-nostdlib", f"-DLOOPS={loops}",
         f"-DCALLS={calls}", *(["-DSPIN"] if spin else []),
         *(["-DTWO_CPUS"] if two_cpus else []), "-x", "assembler-with-cpp",
         "program.S", "-T", "link.ld", "-Wl,-Map=program.map", "-o", elf.name],
        cwd=out_dir, check=True,
    )  # fmt: skip
    return elf


def symbols(elf: Path) -> dict[str, int]:
    output = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    return {
        name: int(value, 16) for value, _, name in (line.split() for line in output.splitlines())
    }


def qemu(
    elf: Path, *extra: str, machine: tuple[str, str] = ("mps2-an385", "cortex-m3")
) -> QemuCommand:
    return QemuCommand(
        [shutil.which(QEMU) or QEMU, "-machine", machine[0], "-cpu", machine[1],
         "-display", "none", "-monitor", "none", "-serial", "null",
         "-semihosting-config", "enable=on,target=native", *extra, "-kernel", str(elf)],
        elf.parent,
    )  # fmt: skip


def run_to_exit(command: QemuCommand, plugin: Path, options: str) -> subprocess.CompletedProcess:
    argv = [*command.argv, "-plugin", f"{plugin},{options}"]
    return subprocess.run(argv, cwd=command.cwd, capture_output=True, text=True, timeout=60)


def window_of(elf: Path) -> Window:
    names = symbols(elf)
    return Window(names["counted"], names["after_call"], "counted() to after_call")


@pytest.mark.parametrize("icount", ICOUNT, ids=list(ICOUNT))
def test_every_window_counts_each_executed_instruction(
    plugin: Path, tmp_path: Path, icount: str
) -> None:
    loops, calls = 1000, 3
    elf = build_program(tmp_path, loops, calls)
    window = window_of(elf)
    hist = tmp_path / "program.hist"
    result = run_to_exit(
        qemu(elf, *ICOUNT[icount]),
        plugin,
        f"start={window.start:#x},end={window.end:#x},hist={hist}",
    )
    assert result.returncode == 0, result.stderr
    assert read_windows(hist) == [expected_per_window(loops)] * calls
    histogram = read_histogram(hist)
    assert sum(histogram.values()) == calls * expected_per_window(loops)

    split = attribute(histogram, elf, tmp_path / "program.map")
    functions = {function: count for (_, function), count in split.by_function.items()}
    assert functions == {
        "counted": calls * (3 + 5 * loops),
        "svc_handler": calls * loops,
    }
    names = symbols(elf)
    loop_body = range(names["counted"] + 4, names["counted"] + 14, 2)
    assert {address: histogram[address] for address in loop_body} == {
        address: calls * loops for address in loop_body
    }
    # Nothing outside the window: not the caller, not the instruction `end` names.
    assert window.end not in histogram
    assert names["reset"] not in histogram


@pytest.mark.parametrize("icount", ["no-icount", "icount-zephyr"])
def test_only_the_cpu_that_opened_the_window_counts_in_it(
    plugin: Path, tmp_path: Path, icount: str
) -> None:
    # Enough instructions that CPU 0's spin runs while CPU 1 is inside a window
    # (in parallel without -icount).
    loops, calls = 100_000, 3
    elf = build_program(tmp_path, loops, calls, two_cpus=True)
    window = window_of(elf)
    hist = tmp_path / "program.hist"
    result = run_to_exit(
        qemu(elf, *ICOUNT[icount], machine=("mps2-an521", "cortex-m33")),
        plugin,
        f"start={window.start:#x},end={window.end:#x},hist={hist}",
    )
    assert result.returncode == 0, result.stderr
    assert read_windows(hist) == [expected_per_window(loops)] * calls
    # Only `counted` and `svc_handler`, nothing of CPU 0's spin in start_cpu1.
    names = symbols(elf)
    assert all(names["counted"] <= address < names["hang"] for address in read_histogram(hist))


@pytest.mark.parametrize("loops", [1, 7, 1001])
def test_the_count_follows_the_loop(plugin: Path, tmp_path: Path, loops: int) -> None:
    elf = build_program(tmp_path, loops, calls=1)
    count = count_instructions(qemu(elf), plugin, window_of(elf), tmp_path / "program.hist")
    assert count.windows == [expected_per_window(loops)]


def test_exit_on_end_stops_qemu_after_the_windows_asked(plugin: Path, tmp_path: Path) -> None:
    elf = build_program(tmp_path, loops=50, calls=4, spin=True)
    count = count_instructions(
        qemu(elf), plugin, window_of(elf), tmp_path / "program.hist", windows=2, timeout=30
    )
    # The program spins after its fourth call: only exit_on_end can have ended QEMU.
    assert count.windows == [expected_per_window(50)] * 2
    assert sum(read_histogram(count.histogram).values()) == 2 * expected_per_window(50)


def test_skipped_windows_count_nothing(plugin: Path, tmp_path: Path) -> None:
    elf = build_program(tmp_path, loops=20, calls=3)
    count = count_instructions(
        qemu(elf), plugin, window_of(elf), tmp_path / "program.hist", windows=2, skip=1
    )
    assert count.windows == [expected_per_window(20)] * 2
    assert sum(read_histogram(count.histogram).values()) == 2 * expected_per_window(20)
    # The first call's window passed over: three calls, two windows counted; one more
    # to count than the program makes is an error.
    with pytest.raises(ExportError, match=r"after 1 of 2 inference windows"):
        count_instructions(
            qemu(elf), plugin, window_of(elf), tmp_path / "h.hist", windows=2, skip=2
        )


def test_a_firmware_that_never_closes_enough_windows(plugin: Path, tmp_path: Path) -> None:
    elf = build_program(tmp_path, loops=5, calls=2)
    with pytest.raises(ExportError, match=r"QEMU exited \(code 0\) after 2 of 5 inference windows"):
        count_instructions(qemu(elf), plugin, window_of(elf), tmp_path / "h.hist", windows=5)
    spinning = build_program(tmp_path / "spin", loops=5, calls=2, spin=True)
    with pytest.raises(ExportError, match=r"timeout after \d+ s: 2 of 3 inference windows"):
        count_instructions(
            qemu(spinning), plugin, window_of(spinning), tmp_path / "s.hist", windows=3, timeout=3
        )


def test_the_plugin_refuses_bad_options(plugin: Path, tmp_path: Path) -> None:
    elf = build_program(tmp_path, loops=5, calls=1)
    result = run_to_exit(qemu(elf), plugin, "start=0x10,hist=x.hist")
    assert result.returncode != 0
    assert "start=ADDRESS and end=ADDRESS are required" in result.stderr


def test_the_return_site_of_a_call_is_found_in_the_code(tmp_path: Path) -> None:
    elf = build_program(tmp_path, loops=5, calls=1)
    names = symbols(elf)
    code = (tmp_path / "code.bin").resolve()
    subprocess.run(
        ["arm-none-eabi-objcopy", "-O", "binary", "--only-section=.text", str(elf), str(code)],
        check=True,
    )
    text = code.read_bytes()
    reset = names["reset"]
    sites = call_sites(text[reset : names["counted"]], reset, names["counted"])
    assert sites == [names["after_call"]]
    assert call_sites(text[reset : names["counted"]], reset, names["hang"]) == []


# Without the tools: the QEMU command line of a Zephyr build, and the error for other boards.

NINJA_COMMANDS = textwrap.dedent(
    """\
    /usr/bin/arm-none-eabi-gcc -c isr_tables.c -o isr_tables.c.obj
    cd /ws/build && /usr/bin/qemu-system-arm -cpu cortex-m55 -machine mps3-an547 -nographic \
-pidfile qemu.pid -icount shift=7,align=off,sleep=off -kernel /ws/build/zephyr/zephyr.elf
    """
)


def test_the_run_qemu_command_is_taken_from_ninja(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Path, "is_file", lambda self: str(self) == "/usr/bin/qemu-system-arm")
    command = parse_commands(NINJA_COMMANDS, Path("/elsewhere"))
    assert command.cwd == Path("/ws/build")
    assert command.argv == [
        "/usr/bin/qemu-system-arm", "-cpu", "cortex-m55", "-machine", "mps3-an547", "-nographic",
        "-icount", "shift=7,align=off,sleep=off", "-kernel", "/ws/build/zephyr/zephyr.elf",
    ]  # fmt: skip


def test_et_size_refuses_a_build_without_qemu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja")
    build = tmp_path / "build"
    (build / "zephyr").mkdir(parents=True)
    for name in ("zephyr.elf", "zephyr.map"):
        (build / "zephyr" / name).write_text("")
    (build / "build.ninja").write_text("rule touch\n  command = touch $out\nbuild all: touch\n")
    (build / "CMakeCache.txt").write_text("BOARD:STRING=mps3/corstone300/fvp\n")
    from et_zephyr.size import qemu as qemu_module

    with pytest.raises(ExportError, match="not a QEMU build: mps3/corstone300/fvp has no run_qemu"):
        qemu_module.qemu_command(build)
    assert et_size_main([str(build), "--start", "f"]) == 1
    assert "error: --start and --end go together" in capsys.readouterr().err


def test_et_size_counts_a_qemu_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`et-size BUILD --count-instructions` end to end on a build folder laid out as
    Zephyr's: the ELF and map under zephyr/, a run_qemu target in build.ninja."""
    need_tools(*TOOLS)
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja")
    build = tmp_path / "build"
    elf = build_program(build / "zephyr", loops=100, calls=3, spin=True)
    (build / "zephyr" / "program.map").rename(build / "zephyr" / "zephyr.map")
    elf = elf.rename(build / "zephyr" / "zephyr.elf")
    argv = " ".join(qemu(elf).argv)
    (build / "build.ninja").write_text(
        f"rule run\n  command = cd {build} && {argv}\n  pool = console\nbuild run_qemu: run\n"
    )
    options = [
        "--count-instructions",
        "--windows",
        "2",
        "--start",
        "counted",
        "--end",
        "after_call",
    ]
    assert et_size_main([str(build), *options, "--top", "2"]) == 0
    printed = capsys.readouterr().out
    assert "instructions per inference (counted to after_call" in printed
    for window in (1, 2):
        assert re.search(rf"^{window}\s+{expected_per_window(100)}$", printed, re.MULTILINE)
    assert re.search(rf"^total\s+{2 * expected_per_window(100):,}\s+100.0 %$", printed, re.M)
    assert read_windows(build / "insn_count.hist") == [expected_per_window(100)] * 2
    assert (build / "insn_count" / "libinsn_count.so").is_file()
