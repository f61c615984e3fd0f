#ifndef MOYA_GATEWAY_COPENSSL_SHIM_H
#define MOYA_GATEWAY_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <string.h>

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
static inline uint64_t cgw_SSL_OP_PRIORITIZE_CHACHA(void) { return SSL_OP_PRIORITIZE_CHACHA; }
static inline long cgw_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long cgw_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long cgw_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }

/* The names a certificate is for, newline-separated into `out`: its subject-alternative DNS names, else its common
   name. Returns the bytes written (names that do not fit are left out). */
static inline int cgw_X509_dns_names(X509 *cert, char *out, int capacity) {
    int used = 0;
    int found = 0;
    if (cert == NULL || out == NULL || capacity <= 0) return 0;
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (names != NULL) {
        for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
            const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
            if (name->type != GEN_DNS) continue;
            int length = ASN1_STRING_length(name->d.dNSName);
            found++;
            if (length <= 0 || used + length + 1 > capacity) continue;
            memcpy(out + used, ASN1_STRING_get0_data(name->d.dNSName), (size_t)length);
            used += length;
            out[used++] = '\n';
        }
        GENERAL_NAMES_free(names);
    }
    if (found == 0) {
        X509_NAME *subject = X509_get_subject_name(cert);
        int index = subject == NULL ? -1 : X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
        if (index >= 0) {
            ASN1_STRING *common = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
            int length = ASN1_STRING_length(common);
            if (length > 0 && used + length + 1 <= capacity) {
                memcpy(out + used, ASN1_STRING_get0_data(common), (size_t)length);
                used += length;
                out[used++] = '\n';
            }
        }
    }
    return used;
}

static inline int cgw_SSL_AD_UNRECOGNIZED_NAME(void) { return SSL_AD_UNRECOGNIZED_NAME; }

#endif
