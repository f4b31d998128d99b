/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The part of QEMU's TCG plugin API that insn_count.c uses, declared here
 * because no Debian or PyPI package ships QEMU's qemu-plugin.h. It matches
 * plugin API version 1, the version of QEMU 7.0 to 8.1 (Debian 12's QEMU 7.2
 * among them): qemu-system-* resolves these functions by name when it loads
 * the plugin (-plugin FILE.so,ARG=VALUE,...), and refuses a plugin whose
 * qemu_plugin_version is outside the range it supports.
 *
 * Only what is used is declared; the opaque types stay opaque (the plugin
 * never reads qemu_info_t, so its layout does not matter here).
 */
#ifndef ET_ZEPHYR_QEMU_PLUGIN_API_H
#define ET_ZEPHYR_QEMU_PLUGIN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))

/* The API version this plugin is written against (QEMU 7.2: versions 0 to 1). */
#define QEMU_PLUGIN_VERSION 1

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;

/* What an instruction callback may do with the vCPU's registers: nothing here. */
enum qemu_plugin_cb_flags {
    QEMU_PLUGIN_CB_NO_REGS,
    QEMU_PLUGIN_CB_R_REGS,
    QEMU_PLUGIN_CB_RW_REGS,
};

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

/* Called for every translation block QEMU translates (not executes). */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
/* From a translation callback: call cb each time this instruction is about to execute. */
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
/* Called once when QEMU exits normally. */
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

/* Text to QEMU's log (stderr unless -D FILE is given). */
void qemu_plugin_outs(const char *string);
/* "on"/"off"/"true"/"false"/"yes"/"no" for the option `name`; false when unparseable. */
bool qemu_plugin_bool_parse(const char *name, const char *val, bool *ret);

/* What the plugin itself defines. */
QEMU_PLUGIN_EXPORT extern int qemu_plugin_version;
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv);

#endif
