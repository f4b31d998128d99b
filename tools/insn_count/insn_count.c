/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * insn_count: a QEMU TCG plugin that counts every executed guest instruction
 * inside windows and writes how often each address executed.
 *
 *   qemu-system-arm ... -plugin libinsn_count.so,start=0x10001234,end=0x10005678,
 *                       hist=run.hist[,windows=N][,skip=K][,exit_on_end=on]
 *
 * A window opens at the first execution of `start` (that instruction is
 * counted) and closes at the next execution of `end` (not counted); the next
 * execution of `start` opens the next window. `windows=N` stops counting after
 * N windows (0, the default: no limit); `skip=K` counts nothing in the first
 * K windows (warm-up runs: a runtime that sets itself up in its first call);
 * `exit_on_end=on` ends QEMU when the last window closes (after one window
 * unless `windows` says otherwise).
 *
 * The histogram file is rewritten each time a window closes, and at exit:
 *
 *   # insn_count start=0x10001234 end=0x10005678 windows=2 total=2464680
 *   # window 1 1232340
 *   # window 2 1232340
 *   0x10001234 2
 *   ...
 *
 * one "0x<address> <count>[ <taken>]" line per address executed inside a
 * window, summed over the windows, in address order (`et-size BUILD
 * --instructions FILE` reads it). <taken>, written when not 0, is how often
 * the next instruction counted was not the one after it in memory: a taken
 * branch, or an exception entered after it (`et-size --cycles` prices taken
 * branches; the header's taken=on says the column is there).
 *
 * Counting is per executed instruction, not per translation block: every
 * instruction of every block gets an execution callback that QEMU calls just
 * before the instruction runs, so a block left early (a fault, an exception
 * taken mid-block) counts only what ran. QEMU re-executes the rest of a block
 * after an I/O access under -icount with memory callbacks only (CF_MEMI_ONLY),
 * so those instructions are not counted twice.
 *
 * A window belongs to the vCPU that opened it: only that vCPU's instructions
 * count, and only it closes the window. On mps2/an521/cpu1 the firmware runs
 * on the second CPU while the first spins in a loop of its own, in a thread
 * of its own when QEMU runs without -icount.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* One guest instruction address; its record never moves once made. */
struct site {
    uint64_t address;
    uint64_t count; /* executions inside windows */
    uint64_t taken; /* executions followed by another address than address + size */
    unsigned int size;
    bool is_start;
    bool is_end;
};

#define SITES_PER_CHUNK 4096

struct chunk {
    struct site sites[SITES_PER_CHUNK];
    struct chunk *next;
};

static struct {
    uint64_t start;
    uint64_t end;
    char *hist_path;
    uint64_t max_windows; /* 0: no limit */
    uint64_t skip;        /* windows to pass over before counting */
    uint64_t skipped;
    bool exit_on_end;

    /* Address -> site, open addressing; made under `lock` at translation time. */
    pthread_mutex_t lock;
    struct site **table;
    size_t table_size;
    size_t n_sites;
    struct chunk *chunks;
    size_t chunk_used;

    /* Window state, written by the window's vCPU only. */
    bool active;
    bool skipping;         /* the open window is a skipped one: nothing in it counts */
    unsigned int owner;    /* the vCPU whose window is open */
    struct site *previous; /* the last instruction counted in the open window */
    bool done;
    uint64_t in_window;
    uint64_t *totals;
    size_t n_windows;
    size_t totals_size;
} state = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* To stderr: QEMU's log (qemu_plugin_outs) is not open yet while options are parsed. */
static void fail(const char *message) {
    fprintf(stderr, "insn_count: %s\n", message);
}

static void *must_alloc(void *p) {
    if (p == NULL) {
        fprintf(stderr, "insn_count: out of memory\n");
        abort();
    }
    return p;
}

static size_t slot_of(uint64_t address, size_t size) {
    /* Thumb instructions are 2-byte aligned: mix the bits above bit 0. */
    uint64_t h = (address >> 1) * 0x9E3779B97F4A7C15ULL;

    return (size_t)(h >> 32) & (size - 1);
}

static void grow_table(void) {
    size_t size = state.table_size ? state.table_size * 2 : 1u << 14;
    struct site **table = must_alloc(calloc(size, sizeof(*table)));

    for (size_t i = 0; i < state.table_size; i++) {
        struct site *s = state.table[i];

        if (s != NULL) {
            size_t j = slot_of(s->address, size);

            while (table[j] != NULL) {
                j = (j + 1) & (size - 1);
            }
            table[j] = s;
        }
    }
    free(state.table);
    state.table = table;
    state.table_size = size;
}

/* The site of `address`, made on first sight. Called with `lock` held. */
static struct site *site_of(uint64_t address) {
    if ((state.n_sites + 1) * 2 > state.table_size) {
        grow_table();
    }
    size_t j = slot_of(address, state.table_size);

    while (state.table[j] != NULL) {
        if (state.table[j]->address == address) {
            return state.table[j];
        }
        j = (j + 1) & (state.table_size - 1);
    }
    if (state.chunks == NULL || state.chunk_used == SITES_PER_CHUNK) {
        struct chunk *c = must_alloc(calloc(1, sizeof(*c)));

        c->next = state.chunks;
        state.chunks = c;
        state.chunk_used = 0;
    }
    struct site *s = &state.chunks->sites[state.chunk_used++];

    s->address = address;
    s->is_start = address == state.start;
    s->is_end = address == state.end;
    state.table[j] = s;
    state.n_sites++;
    return s;
}

static int by_address(const void *a, const void *b) {
    const struct site *x = *(const struct site *const *)a;
    const struct site *y = *(const struct site *const *)b;

    return (x->address > y->address) - (x->address < y->address);
}

/* Writes the histogram to a temporary file and renames it: readers never see half. */
static void write_histogram(bool with_sites) {
    pthread_mutex_lock(&state.lock);
    size_t n = 0;
    struct site **sites = must_alloc(malloc((state.n_sites + 1) * sizeof(*sites)));
    uint64_t total = 0;

    for (struct chunk *c = state.chunks; c != NULL; c = c->next) {
        size_t used = c == state.chunks ? state.chunk_used : SITES_PER_CHUNK;

        for (size_t i = 0; i < used; i++) {
            if (with_sites && c->sites[i].count != 0) {
                sites[n++] = &c->sites[i];
            }
        }
    }
    pthread_mutex_unlock(&state.lock);
    qsort(sites, n, sizeof(*sites), by_address);
    for (size_t w = 0; w < state.n_windows; w++) {
        total += state.totals[w];
    }

    size_t length = strlen(state.hist_path) + 8;
    char *temporary = must_alloc(malloc(length));

    snprintf(temporary, length, "%s.part", state.hist_path);
    FILE *out = fopen(temporary, "w");

    if (out == NULL) {
        char message[512];

        snprintf(message, sizeof(message), "cannot write %s: %s", temporary, strerror(errno));
        fail(message);
        free(temporary);
        free(sites);
        return;
    }
    fprintf(out,
            "# insn_count start=0x%" PRIx64 " end=0x%" PRIx64 " windows=%zu total=%" PRIu64
            " taken=on\n",
            state.start, state.end, state.n_windows, total);
    for (size_t w = 0; w < state.n_windows; w++) {
        fprintf(out, "# window %zu %" PRIu64 "\n", w + 1, state.totals[w]);
    }
    for (size_t i = 0; i < n; i++) {
        if (sites[i]->taken != 0) {
            fprintf(out, "0x%08" PRIx64 " %" PRIu64 " %" PRIu64 "\n", sites[i]->address,
                    sites[i]->count, sites[i]->taken);
        } else {
            fprintf(out, "0x%08" PRIx64 " %" PRIu64 "\n", sites[i]->address, sites[i]->count);
        }
    }
    if (fclose(out) != 0 || rename(temporary, state.hist_path) != 0) {
        char message[512];

        snprintf(message, sizeof(message), "cannot write %s: %s", state.hist_path, strerror(errno));
        fail(message);
    }
    free(temporary);
    free(sites);
}

static void close_window(void) {
    if (state.n_windows == state.totals_size) {
        state.totals_size = state.totals_size ? state.totals_size * 2 : 16;
        state.totals = must_alloc(realloc(state.totals, state.totals_size * sizeof(uint64_t)));
    }
    state.totals[state.n_windows++] = state.in_window;
    state.active = false;
    if (state.max_windows != 0 && state.n_windows >= state.max_windows) {
        state.done = true;
    }
    write_histogram(true);
    if (state.done && state.exit_on_end) {
        char line[128];

        snprintf(line, sizeof(line), "insn_count: %zu windows counted, exiting\n", state.n_windows);
        qemu_plugin_outs(line);
        /* QEMU's own exit path would run the vCPU thread's teardown from inside a block. */
        fflush(NULL);
        _exit(0);
    }
}

/* A taken branch of the last instruction counted when `next` does not follow it in memory. */
static void note_transfer(const struct site *next) {
    struct site *previous = state.previous;

    if (previous != NULL && previous->address + previous->size != next->address) {
        previous->taken++;
    }
}

/* Counts `s` in the open window. */
static void count_site(struct site *s) {
    note_transfer(s);
    s->count++;
    state.in_window++;
    state.previous = s;
}

/* Every instruction but the window's start and end. */
static void on_insn(unsigned int vcpu_index, void *userdata) {
    if (state.active && !state.skipping && vcpu_index == state.owner) {
        count_site(userdata);
    }
}

/* The start and end addresses: may close a window, then may open one. */
static void on_marker(unsigned int vcpu_index, void *userdata) {
    struct site *s = userdata;

    if (state.active && vcpu_index != state.owner) {
        return;
    }
    if (state.active && s->is_end) {
        if (state.skipping) {
            state.active = false;
            state.skipped++;
        } else {
            /* The jump to `end` (a return, say) is the window's last branch. */
            note_transfer(s);
            close_window();
        }
    }
    if (!state.active && !state.done && s->is_start) {
        state.owner = vcpu_index;
        state.active = true;
        state.skipping = state.skipped < state.skip;
        state.in_window = 0;
        state.previous = NULL;
    }
    if (state.active && !state.skipping) {
        count_site(s);
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);

    pthread_mutex_lock(&state.lock);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        struct site *s = site_of(qemu_plugin_insn_vaddr(insn));

        s->size = (unsigned int)qemu_plugin_insn_size(insn);

        qemu_plugin_register_vcpu_insn_exec_cb(insn, s->is_start || s->is_end ? on_marker : on_insn,
                                               QEMU_PLUGIN_CB_NO_REGS, s);
    }
    pthread_mutex_unlock(&state.lock);
}

static void at_qemu_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    if (state.active) {
        /* The file keeps the windows that closed; the open one is left out. */
        char line[200];

        snprintf(line, sizeof(line),
                 "insn_count: QEMU exited inside window %zu (%" PRIu64
                 " instructions so far); %s holds the %zu closed windows\n",
                 state.n_windows + 1, state.in_window, state.hist_path, state.n_windows);
        qemu_plugin_outs(line);
        if (state.n_windows > 0) {
            return;
        }
    }
    /* With no window closed, only the header (windows=0): nothing was counted. */
    write_histogram(state.n_windows > 0);
}

static bool parse_u64(const char *text, uint64_t *value) {
    char *end;

    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);

    if (errno != 0 || end == text || *end != '\0') {
        return false;
    }
    *value = (uint64_t)v;
    return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    bool have_start = false;
    bool have_end = false;
    bool windows_given = false;
    char message[512];

    (void)info;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');

        if (eq == NULL) {
            snprintf(message, sizeof(message), "option '%s' is not KEY=VALUE", argv[i]);
            fail(message);
            return -1;
        }
        *eq = '\0';
        const char *key = argv[i];
        const char *value = eq + 1;
        bool ok = true;

        if (strcmp(key, "start") == 0) {
            ok = parse_u64(value, &state.start);
            have_start = ok;
        } else if (strcmp(key, "end") == 0) {
            ok = parse_u64(value, &state.end);
            have_end = ok;
        } else if (strcmp(key, "windows") == 0) {
            ok = parse_u64(value, &state.max_windows);
            windows_given = ok;
        } else if (strcmp(key, "skip") == 0) {
            ok = parse_u64(value, &state.skip);
        } else if (strcmp(key, "exit_on_end") == 0) {
            ok = qemu_plugin_bool_parse(key, value, &state.exit_on_end);
        } else if (strcmp(key, "hist") == 0) {
            state.hist_path = must_alloc(strdup(value));
        } else {
            snprintf(message, sizeof(message),
                     "unknown option '%s' (start, end, hist, windows, skip, exit_on_end)", key);
            fail(message);
            return -1;
        }
        if (!ok) {
            snprintf(message, sizeof(message), "bad value '%s' for %s", value, key);
            fail(message);
            return -1;
        }
    }
    if (!have_start || !have_end) {
        fail("start=ADDRESS and end=ADDRESS are required");
        return -1;
    }
    /* Thumb function addresses carry bit 0; instructions do not. */
    state.start &= ~(uint64_t)1;
    state.end &= ~(uint64_t)1;
    if (state.hist_path == NULL) {
        state.hist_path = must_alloc(strdup("insn_count.hist"));
    }
    if (state.exit_on_end && !windows_given) {
        state.max_windows = 1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_qemu_exit, NULL);
    return 0;
}
