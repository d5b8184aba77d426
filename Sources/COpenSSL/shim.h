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

#ifndef DIFFSTREAM_COPENSSL_ALPN
#define DIFFSTREAM_COPENSSL_ALPN
#include <string.h>
/* ALPN: the server speaks only HTTP/1.1; choose it when the client offers it, otherwise no ALPN. */
static int diffstream_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                  const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    unsigned int i = 0;
    while (i < inlen) {
        unsigned int len = in[i];
        if (i + 1 + len > inlen) break;
        if (len == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void diffstream_SSL_CTX_select_http11(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, diffstream_alpn_select, NULL);
}
#endif

#ifndef DIFFSTREAM_COPENSSL_CLIENT
#define DIFFSTREAM_COPENSSL_CLIENT
/* The client side (TLSStreamClient): SNI is a function-like macro in OpenSSL 3. */
static inline long diffstream_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
#endif
