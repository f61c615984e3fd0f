#ifndef MOYA_GATEWAY_COPENSSL_SHIM_H
#define MOYA_GATEWAY_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>

/* Function-like macros Swift cannot import, wrapped as static inline functions. */

static inline long cgw_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long cgw_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options) {
    return SSL_CTX_set_options(ctx, options);
}

static inline long cgw_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline long cgw_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline long cgw_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}

static inline long cgw_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}

static inline long cgw_BIO_get_mem_data(BIO *bio, char **pp) {
    return BIO_get_mem_data(bio, pp);
}

static inline size_t cgw_BIO_ctrl_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

static inline uint64_t cgw_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t cgw_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t cgw_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline long cgw_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long cgw_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long cgw_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }

#endif
