#ifndef MOMENTS_CHIREDIS_SHIM_H
#define MOMENTS_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <sys/time.h>

/* hiredis 0.14 takes timeouts as struct timeval; these keep Swift free of timeval arithmetic. */
static inline redisContext *moments_redis_connect(const char *host, int port, long timeout_ms) {
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    return redisConnectWithTimeout(host, port, tv);
}

static inline int moments_redis_set_timeout(redisContext *c, long timeout_ms) {
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    return redisSetTimeout(c, tv);
}
#endif
