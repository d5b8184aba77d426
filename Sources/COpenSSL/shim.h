#ifndef DIFFSTREAM_COPENSSL_SHIM_H
#define DIFFSTREAM_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/pem.h>

/* These are function-like macros in OpenSSL 3, which Swift does not import. */
static inline long diffstream_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long diffstream_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long diffstream_SSL_CTX_set_options(SSL_CTX *ctx, unsigned long options) {
    return SSL_CTX_set_options(ctx, options);
}
static inline long diffstream_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline int diffstream_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int diffstream_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
static inline unsigned long diffstream_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline unsigned long diffstream_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline long diffstream_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long diffstream_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }
#endif
