/* permhost.h: a permhost plugin in C (docs/abi.md). Without a C library:
 *
 *   clang --target=wasm32 -nostdlib -ffreestanding -O2 -Wl,--no-entry \
 *         -o plugin.wasm plugin.c
 *
 * or with wasi-libc, as a WASI reactor:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -o plugin.wasm plugin.c
 *
 * Define the exports with PH_EXPORT, e.g.
 *   PH_EXPORT("permhost_decide") int32_t permhost_decide(void) { ... }
 * and return 0 after ph_output, or 1 after ph_error.
 */
#ifndef PERMHOST_H
#define PERMHOST_H

#include <stddef.h>
#include <stdint.h>

#define PH_EXPORT(name) __attribute__((export_name(name)))
#define PH_IMPORT(name) __attribute__((import_module("extism:host/env"), import_name(name)))

/* The host functions (docs/abi.md, "Imports"). Offsets (uint64_t) name
 * bytes of the host's block memory, not of this module's memory. */
PH_IMPORT("input_length") uint64_t extism_input_length(void);
PH_IMPORT("input_load_u8") uint32_t extism_input_load_u8(uint64_t offset);
PH_IMPORT("input_load_u64") uint64_t extism_input_load_u64(uint64_t offset);
PH_IMPORT("alloc") uint64_t extism_alloc(uint64_t length);
PH_IMPORT("free") void extism_free(uint64_t offset);
PH_IMPORT("length") uint64_t extism_length(uint64_t offset);
PH_IMPORT("load_u8") uint32_t extism_load_u8(uint64_t offset);
PH_IMPORT("store_u8") void extism_store_u8(uint64_t offset, uint32_t byte);
PH_IMPORT("store_u64") void extism_store_u64(uint64_t offset, uint64_t value);
PH_IMPORT("output_set") void extism_output_set(uint64_t offset, uint64_t length);
PH_IMPORT("error_set") void extism_error_set(uint64_t offset);
PH_IMPORT("config_get") uint64_t extism_config_get(uint64_t key_offset);
PH_IMPORT("log_info") void extism_log_info(uint64_t offset);

#ifndef __wasi__
/* What clang may call for struct copies even without a C library. */
__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
}
__attribute__((weak)) void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}
#else
#include <stdlib.h>
#endif

static inline size_t ph_strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

/* ph_block copies n bytes into a new host block and returns its offset
 * (0 for n == 0). */
static inline uint64_t ph_block(const char *p, uint64_t n) {
  uint64_t off = extism_alloc(n), i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = v << 8 | (unsigned char)p[i + b];
    extism_store_u64(off + i, v);
  }
  for (; i < n; i++) extism_store_u8(off + i, (unsigned char)p[i]);
  return off;
}

/* ph_input returns the call's input (the request JSON), NUL-terminated,
 * in a buffer that grows as needed and is reused by the next call (without
 * a C library: the heap itself, from __heap_base); NULL when memory cannot
 * grow that far. */
static inline char *ph_input(uint64_t *length) {
  uint64_t n = extism_input_length();
#ifdef __wasi__
  static char *buf;
  static uint64_t cap;
  if (n + 1 > cap) {
    char *b = realloc(buf, n + 1);
    if (!b) return NULL;
    buf = b, cap = n + 1;
  }
#else
  extern unsigned char __heap_base;
  char *buf = (char *)&__heap_base;
  uint64_t need = (uint64_t)(uintptr_t)buf + n + 1;
  uint64_t have = (uint64_t)__builtin_wasm_memory_size(0) * 65536;
  if (need > have && __builtin_wasm_memory_grow(0, (need - have + 65535) / 65536) == (size_t)-1) return NULL;
#endif
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = extism_input_load_u64(i);
    for (int b = 0; b < 8; b++) buf[i + b] = (char)(v >> (8 * b));
  }
  for (; i < n; i++) buf[i] = (char)extism_input_load_u8(i);
  buf[n] = 0;
  *length = n;
  return buf;
}

/* ph_output makes s the call's output. */
static inline void ph_output(const char *s) { extism_output_set(ph_block(s, ph_strlen(s)), ph_strlen(s)); }

/* ph_error fails the call with msg: permhost applies the plugin's
 * failure_policy (by default its conservative fallback). */
static inline void ph_error(const char *msg) { extism_error_set(ph_block(msg, ph_strlen(msg))); }

/* ph_log writes msg to the decision log. */
static inline void ph_log(const char *msg) { extism_log_info(ph_block(msg, ph_strlen(msg))); }

/* ph_config copies the value of [plugin.config] key (strings as
 * themselves, other values as JSON text) into buf, NUL-terminated, and
 * returns its length; -1 when the key is absent or the value does not fit. */
static inline int64_t ph_config(const char *key, char *buf, uint64_t cap) {
  uint64_t k = ph_block(key, ph_strlen(key));
  uint64_t v = extism_config_get(k);
  extism_free(k);
  if (v == 0) return -1;
  uint64_t n = extism_length(v);
  if (n >= cap) {
    extism_free(v);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++) buf[i] = (char)extism_load_u8(v + i);
  buf[n] = 0;
  extism_free(v);
  return (int64_t)n;
}

#endif
