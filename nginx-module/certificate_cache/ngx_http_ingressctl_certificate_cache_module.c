/*
 * ingressctl's certificate cache: certificates named by variables
 * (`ssl_certificate $variable;`) parsed once per worker instead of at every
 * full TLS handshake, for NGINX without `ssl_certificate_cache` (< 1.27.4).
 *
 *   http {
 *       ingressctl_certificate_cache max=10000;
 *
 *       server {
 *           listen 443 ssl;
 *           ssl_certificate     $certificate;
 *           ssl_certificate_key $certificate;
 *       }
 *   }
 *
 * Without the directive the module changes nothing.  With it, every server
 * whose SSL context loads its certificates at handshakes (NGINX installed its
 * certificate callback there because `ssl_certificate` names a variable) gets
 * this module's callback instead, which evaluates the same `ssl_certificate`
 * and `ssl_certificate_key` values for the server the client's SNI selected,
 * exactly as NGINX's callback does.
 *
 * Guarantees:
 * - A handshake serves what NGINX's own callback would serve for the files as
 *   they are at that handshake: a cached certificate, chain and key are used
 *   only when a stat() of the certificate and key files still shows the device,
 *   inode, size and modification time they had when they were read (a file
 *   replaced or rewritten, e.g. a rotated Secret, is read again; a file that
 *   can no longer be stat()ed is not served from the cache).  A file is read
 *   through one descriptor and the fstat() of that descriptor is what is
 *   remembered, so the cache never pairs old contents with new metadata.
 * - A certificate or key that cannot be read or parsed fails that handshake
 *   only (logged as NGINX logs it); nothing is cached for it, and an entry
 *   its files no longer match is dropped.
 * - Values NGINX loads in other ways (`data:` certificates or keys, `engine:`
 *   keys, an empty value, `ssl_password_file`) are passed to NGINX's own
 *   loader (ngx_ssl_connection_certificate) uncached.
 * - Each worker holds at most `max` entries (one per certificate/key pair);
 *   the least recently used entry is dropped first.  An entry holds references
 *   to the parsed OpenSSL objects; connections that use them keep their own.
 * - $ingressctl_certificate_cache_status is what the connection's handshake
 *   found: HIT, MISS (not cached), EXPIRED (cached, but the file changed),
 *   BYPASS (not cacheable, see above), or empty (no certificate loaded by this
 *   module).  With several certificates, the first that was not a HIT.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#if !(NGX_HTTP_SSL)
#error ngx_http_ingressctl_certificate_cache_module needs NGINX with the SSL module
#endif


#define NGX_HTTP_CERT_CACHE_MAX_FILE  (1024 * 1024)

#define NGX_HTTP_CERT_CACHE_NONE      0
#define NGX_HTTP_CERT_CACHE_HIT       1
#define NGX_HTTP_CERT_CACHE_MISS      2
#define NGX_HTTP_CERT_CACHE_EXPIRED   3
#define NGX_HTTP_CERT_CACHE_BYPASS    4


typedef struct {
    dev_t                       dev;
    ino_t                       ino;
    off_t                       size;
    time_t                      mtime_sec;
    long                        mtime_nsec;
} ngx_http_cert_cache_stat_t;


typedef struct {
    ngx_str_node_t              sn;          /* key: "<cert>\0<key>" */
    ngx_queue_t                 queue;       /* most recently used first */
    ngx_http_cert_cache_stat_t  cert_stat;
    ngx_http_cert_cache_stat_t  key_stat;
    X509                       *cert;
    STACK_OF(X509)             *chain;
    EVP_PKEY                   *pkey;
} ngx_http_cert_cache_entry_t;


typedef struct {
    ngx_uint_t                  max;
    ngx_uint_t                  count;
    ngx_rbtree_t                rbtree;
    ngx_rbtree_node_t           sentinel;
    ngx_queue_t                 queue;
} ngx_http_cert_cache_main_conf_t;


typedef struct {
    ngx_http_ssl_srv_conf_t          *sscf;
    ngx_http_cert_cache_main_conf_t  *cache;
} ngx_http_cert_cache_server_t;


static ngx_int_t ngx_http_cert_cache_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_cert_cache_init(ngx_conf_t *cf);
static void *ngx_http_cert_cache_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_cert_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_http_cert_cache_cleanup(void *data);
static int ngx_http_cert_cache_callback(ngx_ssl_conn_t *ssl_conn, void *arg);
static ngx_http_request_t *ngx_http_cert_cache_alloc_request(
    ngx_connection_t *c);
static ngx_int_t ngx_http_cert_cache_certificate(ngx_connection_t *c,
    ngx_pool_t *pool, ngx_http_cert_cache_server_t *srv, ngx_str_t *cert,
    ngx_str_t *key, ngx_uint_t *status);
static ngx_http_cert_cache_entry_t *ngx_http_cert_cache_load(
    ngx_connection_t *c, ngx_str_t *cert, ngx_str_t *key);
static ngx_int_t ngx_http_cert_cache_read(ngx_connection_t *c,
    ngx_str_t *path, const char *what, u_char **data, size_t *len,
    ngx_http_cert_cache_stat_t *st);
static ngx_int_t ngx_http_cert_cache_fresh(ngx_str_t *path,
    ngx_http_cert_cache_stat_t *st);
static void ngx_http_cert_cache_free(ngx_http_cert_cache_main_conf_t *cache,
    ngx_http_cert_cache_entry_t *e);
static int ngx_http_cert_cache_no_password(char *buf, int size, int rwflag,
    void *userdata);
static ngx_int_t ngx_http_cert_cache_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static int  ngx_http_cert_cache_status_index = -1;

static ngx_str_t  ngx_http_cert_cache_statuses[] = {
    ngx_null_string,
    ngx_string("HIT"),
    ngx_string("MISS"),
    ngx_string("EXPIRED"),
    ngx_string("BYPASS")
};


static ngx_command_t  ngx_http_cert_cache_commands[] = {

    { ngx_string("ingressctl_certificate_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_cert_cache,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ingressctl_certificate_cache_module_ctx = {
    ngx_http_cert_cache_add_variables,     /* preconfiguration */
    ngx_http_cert_cache_init,              /* postconfiguration */

    ngx_http_cert_cache_create_main_conf,  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_certificate_cache_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_certificate_cache_module_ctx, /* module context */
    ngx_http_cert_cache_commands,          /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_cert_cache_vars[] = {

    { ngx_string("ingressctl_certificate_cache_status"), NULL,
      ngx_http_cert_cache_status_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_cert_cache_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_cert_cache_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static void *
ngx_http_cert_cache_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_cert_cache_main_conf_t  *cmcf;

    cmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_cert_cache_main_conf_t));
    if (cmcf == NULL) {
        return NULL;
    }

    cmcf->max = NGX_CONF_UNSET_UINT;

    ngx_rbtree_init(&cmcf->rbtree, &cmcf->sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_queue_init(&cmcf->queue);

    return cmcf;
}


static char *
ngx_http_cert_cache(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_cert_cache_main_conf_t *cmcf = conf;

    ngx_int_t            max;
    ngx_str_t           *value;
    ngx_pool_cleanup_t  *cln;

    if (cmcf->max != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len <= 4 || ngx_strncmp(value[1].data, "max=", 4) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\", expected \"max=<n>\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    max = ngx_atoi(value[1].data + 4, value[1].len - 4);
    if (max == NGX_ERROR || max == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    cmcf->max = (ngx_uint_t) max;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_cert_cache_cleanup;
    cln->data = cmcf;

    return NGX_CONF_OK;
}


static void
ngx_http_cert_cache_cleanup(void *data)
{
    ngx_http_cert_cache_main_conf_t *cmcf = data;

    ngx_queue_t  *q;

    while (!ngx_queue_empty(&cmcf->queue)) {
        q = ngx_queue_last(&cmcf->queue);
        ngx_http_cert_cache_free(cmcf,
            ngx_queue_data(q, ngx_http_cert_cache_entry_t, queue));
    }
}


/*
 * After the servers were merged: NGINX's SSL module has compiled each
 * server's `ssl_certificate` values and installed its certificate callback
 * on the contexts whose certificates name variables; this module's callback
 * takes its place there.
 */

static ngx_int_t
ngx_http_cert_cache_init(ngx_conf_t *cf)
{
    ngx_uint_t                        s;
    ngx_http_ssl_srv_conf_t          *sscf;
    ngx_http_core_srv_conf_t        **cscfp;
    ngx_http_core_main_conf_t        *cmcf;
    ngx_http_cert_cache_server_t     *srv;
    ngx_http_cert_cache_main_conf_t  *ccmcf;

    ccmcf = ngx_http_conf_get_module_main_conf(cf,
                                  ngx_http_ingressctl_certificate_cache_module);

    if (ccmcf->max == NGX_CONF_UNSET_UINT) {
        return NGX_OK;
    }

    if (ngx_http_cert_cache_status_index == -1) {
        ngx_http_cert_cache_status_index = SSL_get_ex_new_index(0, NULL, NULL,
                                                                NULL, NULL);
        if (ngx_http_cert_cache_status_index == -1) {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_get_ex_new_index() failed");
            return NGX_ERROR;
        }
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {

        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->certificate_values == NULL || sscf->ssl.ctx == NULL) {
            continue;
        }

        srv = ngx_palloc(cf->pool, sizeof(ngx_http_cert_cache_server_t));
        if (srv == NULL) {
            return NGX_ERROR;
        }

        srv->sscf = sscf;
        srv->cache = ccmcf;

        SSL_CTX_set_cert_cb(sscf->ssl.ctx, ngx_http_cert_cache_callback, srv);
    }

    return NGX_OK;
}


/* NGINX's ngx_http_ssl_certificate(), with the cache in place of the loader */

static int
ngx_http_cert_cache_callback(ngx_ssl_conn_t *ssl_conn, void *arg)
{
    ngx_http_cert_cache_server_t *srv = arg;

    ngx_str_t                  cert, key;
    ngx_uint_t                 i, nelts, status;
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_complex_value_t  *certs, *keys;

    c = ngx_ssl_get_connection(ssl_conn);

    if (c->ssl->handshaked) {
        return 0;
    }

    r = ngx_http_cert_cache_alloc_request(c);
    if (r == NULL) {
        return 0;
    }

    r->logged = 1;

    nelts = srv->sscf->certificate_values->nelts;
    certs = srv->sscf->certificate_values->elts;
    keys = srv->sscf->certificate_key_values->elts;
    status = NGX_HTTP_CERT_CACHE_NONE;

    for (i = 0; i < nelts; i++) {

        if (ngx_http_complex_value(r, &certs[i], &cert) != NGX_OK) {
            goto failed;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "ssl cert: \"%s\"", cert.data);

        if (ngx_http_complex_value(r, &keys[i], &key) != NGX_OK) {
            goto failed;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "ssl key: \"%s\"", key.data);

        if (ngx_http_cert_cache_certificate(c, r->pool, srv, &cert, &key,
                                            &status)
            != NGX_OK)
        {
            goto failed;
        }
    }

    SSL_set_ex_data(ssl_conn, ngx_http_cert_cache_status_index,
                    (void *) (uintptr_t) status);

    ngx_http_free_request(r, 0);
    c->log->action = "SSL handshaking";
    c->destroyed = 0;
    return 1;

failed:

    ngx_http_free_request(r, 0);
    c->log->action = "SSL handshaking";
    c->destroyed = 0;
    return 0;
}


/*
 * What NGINX's (static) ngx_http_alloc_request() sets up: enough of a request
 * to evaluate variables in the server the SNI selected; it is not counted as
 * a request (no stub_status counters, no c->requests) and never logged.
 */

static ngx_http_request_t *
ngx_http_cert_cache_alloc_request(ngx_connection_t *c)
{
    ngx_pool_t                 *pool;
    ngx_time_t                 *tp;
    ngx_http_request_t         *r;
    ngx_http_connection_t      *hc;
    ngx_http_core_srv_conf_t   *cscf;
    ngx_http_core_main_conf_t  *cmcf;

    hc = c->data;

    cscf = ngx_http_get_module_srv_conf(hc->conf_ctx, ngx_http_core_module);

    pool = ngx_create_pool(cscf->request_pool_size, c->log);
    if (pool == NULL) {
        return NULL;
    }

    r = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    if (r == NULL) {
        goto failed;
    }

    r->pool = pool;

    r->http_connection = hc;
    r->signature = NGX_HTTP_MODULE;
    r->connection = c;

    r->main_conf = hc->conf_ctx->main_conf;
    r->srv_conf = hc->conf_ctx->srv_conf;
    r->loc_conf = hc->conf_ctx->loc_conf;

    r->read_event_handler = ngx_http_block_reading;

    r->header_in = hc->busy ? hc->busy->buf : c->buffer;

    if (ngx_list_init(&r->headers_out.headers, r->pool, 20,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        goto failed;
    }

    if (ngx_list_init(&r->headers_out.trailers, r->pool, 4,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        goto failed;
    }

    r->ctx = ngx_pcalloc(r->pool, sizeof(void *) * ngx_http_max_module);
    if (r->ctx == NULL) {
        goto failed;
    }

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);

    r->variables = ngx_pcalloc(r->pool, cmcf->variables.nelts
                                        * sizeof(ngx_http_variable_value_t));
    if (r->variables == NULL) {
        goto failed;
    }

    r->main = r;
    r->count = 1;

    tp = ngx_timeofday();
    r->start_sec = tp->sec;
    r->start_msec = tp->msec;

    r->method = NGX_HTTP_UNKNOWN;
    r->http_version = NGX_HTTP_VERSION_10;

    r->headers_in.content_length_n = -1;
    r->headers_in.keep_alive_n = -1;
    r->headers_out.content_length_n = -1;
    r->headers_out.last_modified_time = -1;

    r->uri_changes = NGX_HTTP_MAX_URI_CHANGES + 1;
    r->subrequests = NGX_HTTP_MAX_SUBREQUESTS + 1;

    r->http_state = NGX_HTTP_READING_REQUEST_STATE;

    return r;

failed:

    ngx_destroy_pool(pool);
    return NULL;
}


static ngx_int_t
ngx_http_cert_cache_certificate(ngx_connection_t *c, ngx_pool_t *pool,
    ngx_http_cert_cache_server_t *srv, ngx_str_t *cert, ngx_str_t *key,
    ngx_uint_t *status)
{
    u_char                           *p;
    uint32_t                          hash;
    ngx_str_t                         name;
    ngx_uint_t                        found, same;
    ngx_str_node_t                   *sn;
    ngx_http_cert_cache_entry_t      *e;
    ngx_http_cert_cache_main_conf_t  *cache;

    cache = srv->cache;

    if (cert->len == 0
        || key->len == 0
        || ngx_strncmp(cert->data, "data:", sizeof("data:") - 1) == 0
        || ngx_strncmp(key->data, "data:", sizeof("data:") - 1) == 0
        || ngx_strncmp(key->data, "engine:", sizeof("engine:") - 1) == 0
        || (srv->sscf->passwords && srv->sscf->passwords->nelts))
    {
        if (*status == NGX_HTTP_CERT_CACHE_NONE
            || *status == NGX_HTTP_CERT_CACHE_HIT)
        {
            *status = NGX_HTTP_CERT_CACHE_BYPASS;
        }

        return ngx_ssl_connection_certificate(c, pool, cert, key,
                                              srv->sscf->passwords);
    }

    /* NUL-terminated full names, as NGINX's loaders resolve them */

    if (ngx_get_full_name(pool, (ngx_str_t *) &ngx_cycle->conf_prefix, cert)
        != NGX_OK
        || ngx_get_full_name(pool, (ngx_str_t *) &ngx_cycle->conf_prefix, key)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    name.len = cert->len + 1 + key->len;
    name.data = ngx_pnalloc(pool, name.len);
    if (name.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(name.data, cert->data, cert->len);
    *p++ = '\0';
    ngx_memcpy(p, key->data, key->len);

    hash = ngx_crc32_long(name.data, name.len);

    /* one PEM file with both (as the controller writes them): one stat() */

    same = (cert->len == key->len
            && ngx_memcmp(cert->data, key->data, key->len) == 0);

    sn = ngx_str_rbtree_lookup(&cache->rbtree, &name, hash);
    e = sn ? (ngx_http_cert_cache_entry_t *) sn : NULL;
    found = (e != NULL);

    if (e
        && ngx_http_cert_cache_fresh(cert, &e->cert_stat) == NGX_OK
        && (same || ngx_http_cert_cache_fresh(key, &e->key_stat) == NGX_OK))
    {
        ngx_queue_remove(&e->queue);
        ngx_queue_insert_head(&cache->queue, &e->queue);

        if (*status == NGX_HTTP_CERT_CACHE_NONE) {
            *status = NGX_HTTP_CERT_CACHE_HIT;
        }

    } else {
        if (e) {
            /* stale: never served again, whether the new files load or not */
            ngx_http_cert_cache_free(cache, e);
        }

        e = ngx_http_cert_cache_load(c, cert, key);
        if (e == NULL) {
            return NGX_ERROR;
        }

        /* the key after the entry */

        e->sn.str.len = name.len;
        e->sn.str.data = (u_char *) e + sizeof(ngx_http_cert_cache_entry_t);
        ngx_memcpy(e->sn.str.data, name.data, name.len);
        e->sn.node.key = hash;

        while (cache->count >= cache->max) {
            ngx_http_cert_cache_free(cache,
                ngx_queue_data(ngx_queue_last(&cache->queue),
                               ngx_http_cert_cache_entry_t, queue));
        }

        ngx_rbtree_insert(&cache->rbtree, &e->sn.node);
        ngx_queue_insert_head(&cache->queue, &e->queue);
        cache->count++;

        if (*status == NGX_HTTP_CERT_CACHE_NONE
            || *status == NGX_HTTP_CERT_CACHE_HIT)
        {
            *status = found ? NGX_HTTP_CERT_CACHE_EXPIRED
                            : NGX_HTTP_CERT_CACHE_MISS;
        }
    }

    /* as ngx_ssl_connection_certificate(), with references kept */

    if (SSL_use_certificate(c->ssl->connection, e->cert) == 0) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "SSL_use_certificate(\"%s\") failed", cert->data);
        return NGX_ERROR;
    }

    if (SSL_set1_chain(c->ssl->connection, e->chain) == 0) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "SSL_set1_chain(\"%s\") failed", cert->data);
        return NGX_ERROR;
    }

    if (SSL_use_PrivateKey(c->ssl->connection, e->pkey) == 0) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "SSL_use_PrivateKey(\"%s\") failed", key->data);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* A new entry (not in the cache yet), its key's room after it; NULL: logged */

static ngx_http_cert_cache_entry_t *
ngx_http_cert_cache_load(ngx_connection_t *c, ngx_str_t *cert, ngx_str_t *key)
{
    BIO                          *bio;
    X509                         *x509;
    size_t                        cert_len, key_len;
    u_char                       *cert_data, *key_data;
    u_long                        n;
    ngx_uint_t                    same;
    ngx_http_cert_cache_entry_t  *e;

    bio = NULL;
    cert_data = NULL;
    key_data = NULL;

    e = ngx_alloc(sizeof(ngx_http_cert_cache_entry_t) + cert->len + 1
                  + key->len, c->log);
    if (e == NULL) {
        return NULL;
    }

    ngx_memzero(e, sizeof(ngx_http_cert_cache_entry_t));

    if (ngx_http_cert_cache_read(c, cert, "certificate", &cert_data, &cert_len,
                                 &e->cert_stat)
        != NGX_OK)
    {
        goto failed;
    }

    bio = BIO_new_mem_buf(cert_data, (int) cert_len);
    if (bio == NULL) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0, "BIO_new_mem_buf() failed");
        goto failed;
    }

    /* certificate itself */

    e->cert = PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL);
    if (e->cert == NULL) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "cannot load certificate \"%s\": "
                      "PEM_read_bio_X509_AUX() failed", cert->data);
        goto failed;
    }

    /* rest of the chain */

    e->chain = sk_X509_new_null();
    if (e->chain == NULL) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0, "sk_X509_new_null() failed");
        goto failed;
    }

    for ( ;; ) {

        x509 = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (x509 == NULL) {
            n = ERR_peek_last_error();

            if (ERR_GET_LIB(n) == ERR_LIB_PEM
                && ERR_GET_REASON(n) == PEM_R_NO_START_LINE)
            {
                /* end of file */
                ERR_clear_error();
                break;
            }

            /* some real error */

            ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                          "cannot load certificate \"%s\": "
                          "PEM_read_bio_X509() failed", cert->data);
            goto failed;
        }

        if (sk_X509_push(e->chain, x509) == 0) {
            ngx_ssl_error(NGX_LOG_ERR, c->log, 0, "sk_X509_push() failed");
            X509_free(x509);
            goto failed;
        }
    }

    BIO_free(bio);
    bio = NULL;

    same = (cert->len == key->len
            && ngx_strncmp(cert->data, key->data, key->len) == 0);

    if (same) {
        key_data = cert_data;
        key_len = cert_len;
        e->key_stat = e->cert_stat;

    } else if (ngx_http_cert_cache_read(c, key, "certificate key", &key_data,
                                        &key_len, &e->key_stat)
               != NGX_OK)
    {
        goto failed;
    }

    bio = BIO_new_mem_buf(key_data, (int) key_len);
    if (bio == NULL) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0, "BIO_new_mem_buf() failed");
        goto failed;
    }

    e->pkey = PEM_read_bio_PrivateKey(bio, NULL,
                                      ngx_http_cert_cache_no_password, NULL);
    if (e->pkey == NULL) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "cannot load certificate key \"%s\": "
                      "PEM_read_bio_PrivateKey() failed", key->data);
        goto failed;
    }

    BIO_free(bio);
    bio = NULL;

    /* a pair SSL_use_PrivateKey() would refuse is not cached */

    if (X509_check_private_key(e->cert, e->pkey) == 0) {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "cannot load certificate key \"%s\": it does not match "
                      "the certificate \"%s\"", key->data, cert->data);
        goto failed;
    }

    if (key_data != cert_data) {
        ngx_explicit_memzero(key_data, key_len);
        ngx_free(key_data);
    }

    ngx_explicit_memzero(cert_data, cert_len);
    ngx_free(cert_data);

    return e;

failed:

    if (bio) {
        BIO_free(bio);
    }

    if (key_data && key_data != cert_data) {
        ngx_explicit_memzero(key_data, key_len);
        ngx_free(key_data);
    }

    if (cert_data) {
        ngx_explicit_memzero(cert_data, cert_len);
        ngx_free(cert_data);
    }

    if (e->cert) {
        X509_free(e->cert);
    }

    if (e->chain) {
        sk_X509_pop_free(e->chain, X509_free);
    }

    if (e->pkey) {
        EVP_PKEY_free(e->pkey);
    }

    ngx_free(e);

    return NULL;
}


/* A whole file, and the fstat() of the descriptor it was read from */

static ngx_int_t
ngx_http_cert_cache_read(ngx_connection_t *c, ngx_str_t *path,
    const char *what, u_char **data, size_t *len,
    ngx_http_cert_cache_stat_t *st)
{
    u_char          *buf;
    size_t           size;
    ssize_t          n;
    ngx_fd_t         fd;
    ngx_file_info_t  fi;

    fd = ngx_open_file(path->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        ngx_log_error(NGX_LOG_ERR, c->log, ngx_errno,
                      "cannot load %s \"%s\": " ngx_open_file_n " failed",
                      what, path->data);
        return NGX_ERROR;
    }

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ERR, c->log, ngx_errno,
                      "cannot load %s \"%s\": " ngx_fd_info_n " failed",
                      what, path->data);
        goto failed;
    }

    if (!S_ISREG(fi.st_mode) || fi.st_size > NGX_HTTP_CERT_CACHE_MAX_FILE) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "cannot load %s \"%s\": not a regular file of at most "
                      "%d bytes", what, path->data,
                      NGX_HTTP_CERT_CACHE_MAX_FILE);
        goto failed;
    }

    size = (size_t) fi.st_size;

    buf = ngx_alloc(size ? size : 1, c->log);
    if (buf == NULL) {
        goto failed;
    }

    for (*len = 0; *len < size; *len += n) {
        n = read(fd, buf + *len, size - *len);

        if (n == -1 && ngx_errno == NGX_EINTR) {
            n = 0;
            continue;
        }

        if (n <= 0) {
            ngx_log_error(NGX_LOG_ERR, c->log, n == -1 ? ngx_errno : 0,
                          "cannot load %s \"%s\": read() failed",
                          what, path->data);
            ngx_explicit_memzero(buf, size);
            ngx_free(buf);
            goto failed;
        }
    }

    (void) ngx_close_file(fd);

    st->dev = fi.st_dev;
    st->ino = fi.st_ino;
    st->size = fi.st_size;
    st->mtime_sec = fi.st_mtim.tv_sec;
    st->mtime_nsec = fi.st_mtim.tv_nsec;

    *data = buf;

    return NGX_OK;

failed:

    (void) ngx_close_file(fd);
    return NGX_ERROR;
}


static ngx_int_t
ngx_http_cert_cache_fresh(ngx_str_t *path, ngx_http_cert_cache_stat_t *st)
{
    ngx_file_info_t  fi;

    if (ngx_file_info(path->data, &fi) == NGX_FILE_ERROR) {
        return NGX_DECLINED;
    }

    if (fi.st_dev != st->dev
        || fi.st_ino != st->ino
        || fi.st_size != st->size
        || fi.st_mtim.tv_sec != st->mtime_sec
        || fi.st_mtim.tv_nsec != st->mtime_nsec)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static void
ngx_http_cert_cache_free(ngx_http_cert_cache_main_conf_t *cache,
    ngx_http_cert_cache_entry_t *e)
{
    ngx_rbtree_delete(&cache->rbtree, &e->sn.node);
    ngx_queue_remove(&e->queue);
    cache->count--;

    X509_free(e->cert);
    sk_X509_pop_free(e->chain, X509_free);
    EVP_PKEY_free(e->pkey);
    ngx_free(e);
}


static int
ngx_http_cert_cache_no_password(char *buf, int size, int rwflag,
    void *userdata)
{
    return 0;
}


static ngx_int_t
ngx_http_cert_cache_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    uintptr_t  status;

    status = NGX_HTTP_CERT_CACHE_NONE;

    if (r->connection->ssl && ngx_http_cert_cache_status_index != -1) {
        status = (uintptr_t) SSL_get_ex_data(r->connection->ssl->connection,
                                             ngx_http_cert_cache_status_index);
    }

    if (status == NGX_HTTP_CERT_CACHE_NONE
        || status > NGX_HTTP_CERT_CACHE_BYPASS)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = ngx_http_cert_cache_statuses[status].len;
    v->data = ngx_http_cert_cache_statuses[status].data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}
