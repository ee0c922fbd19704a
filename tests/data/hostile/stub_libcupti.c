/* A fake libcupti for tests/test_copytrace_build.py (issue 29, item 13): it says it is the
 * CUPTI release named by STUB_CUPTI_VERSION (cuptiGetVersion's xxyyzz, e.g. 130200 for 13.2),
 * and otherwise accepts everything and records nothing. Every call that would claim CUPTI
 * (Subscribe, Enable) prints one line on stderr, so that a test sees whether the copy-trace
 * library touched CUPTI after reading the version. Built by the test with `cc -shared`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int cuptiGetVersion(uint32_t *version) {
    const char *v = getenv("STUB_CUPTI_VERSION");
    *version = v != NULL ? (uint32_t)strtoul(v, NULL, 10) : 130000u;
    return 0;
}
int cuptiGetResultString(int result, const char **text) { (void)result; *text = "stub"; return 0; }
int cuptiSubscribe(void **sub, void *cb, void *data) {
    (void)cb; (void)data; *sub = (void *)1;
    fprintf(stderr, "stub-cupti: cuptiSubscribe\n");
    return 0;
}
int cuptiUnsubscribe(void *sub) { (void)sub; return 0; }
int cuptiActivityRegisterCallbacks(void *req, void *done) { (void)req; (void)done; return 0; }
int cuptiActivityRegisterTimestampCallback(void *cb) { (void)cb; return 0; }
int cuptiActivityEnable(int kind) { fprintf(stderr, "stub-cupti: cuptiActivityEnable %d\n", kind); return 0; }
int cuptiActivityFlushPeriod(uint32_t ms) { (void)ms; return 0; }
int cuptiActivityFlushAll(uint32_t flag) { (void)flag; return 0; }
int cuptiActivityGetNextRecord(uint8_t *buf, size_t n, void **rec) { (void)buf; (void)n; (void)rec; return 1; }
int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t s, size_t *n) { (void)ctx; (void)s; *n = 0; return 0; }
