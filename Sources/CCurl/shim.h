#ifndef MOMENTS_CCURL_SHIM_H
#define MOMENTS_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
   wrapper per argument kind. */
static inline CURLcode moments_curl_set_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode moments_curl_set_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode moments_curl_set_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode moments_curl_set_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode moments_curl_set_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*moments_curl_io_callback)(char *buffer, size_t size, size_t count, void *context);
static inline CURLcode moments_curl_set_write_function(CURL *h, moments_curl_io_callback f) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode moments_curl_set_read_function(CURL *h, moments_curl_io_callback f) {
    return curl_easy_setopt(h, CURLOPT_READFUNCTION, f);
}
static inline CURLcode moments_curl_set_header_function(CURL *h, moments_curl_io_callback f) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}

typedef int (*moments_curl_progress_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode moments_curl_set_progress_function(CURL *h, moments_curl_progress_callback f) {
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}

static inline CURLcode moments_curl_get_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

/* The value a read callback returns to abort the transfer. */
static inline size_t moments_curl_read_abort(void) { return CURL_READFUNC_ABORT; }
#endif
