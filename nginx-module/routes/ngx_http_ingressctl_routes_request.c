/*
 * ingressctl's routes: serving a request from the table (the server rewrite
 * phase handler), the upstream that hands a request to its route's
 * upstream, and TLS (the certificate variable, the server name callback);
 * see ngx_http_ingressctl_routes_module.c for what they guarantee.
 */

#include "ngx_http_ingressctl_routes.h"


static ngx_str_t  ngx_http_routes_ingress = ngx_string("ingress");


static ngx_http_routes_shctx_t *
ngx_http_routes_table(ngx_http_routes_main_conf_t *rmcf)
{
    if (rmcf == NULL || !rmcf->enabled || rmcf->shm_zone == NULL) {
        return NULL;
    }

    return ((ngx_slab_pool_t *) rmcf->shm_zone->shm.addr)->data;
}


static ngx_int_t
ngx_http_routes_set(ngx_http_request_t *r, ngx_int_t index, u_char *data,
    size_t len)
{
    ngx_http_variable_value_t  *v;

    v = &r->variables[index];
    v->data = data;
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


static u_char *
ngx_http_routes_dup(ngx_http_request_t *r, ngx_str_t *s)
{
    u_char  *p;

    p = ngx_pnalloc(r->pool, s->len + 1);
    if (p == NULL) {
        return NULL;
    }

    ngx_memcpy(p, s->data, s->len);
    p[s->len] = '\0';

    return p;
}


static ngx_int_t
ngx_http_routes_redirect(ngx_http_request_t *r, ngx_uint_t code,
    ngx_uint_t port)
{
    size_t            len;
    u_char           *p;
    ngx_table_elt_t  *h;

    len = sizeof("https://:65535") - 1 + r->headers_in.server.len
          + r->unparsed_uri.len;

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif
    ngx_str_set(&h->key, "Location");
    h->value.data = p;
    h->value.len = ngx_sprintf(p, "https://%V:%ui%V", &r->headers_in.server,
                               port, &r->unparsed_uri)
                   - p;

    ngx_http_clear_location(r);
    r->headers_out.location = h;

    return code;
}


/*
 * The server rewrite phase of the server with `ingressctl_routes_serve`:
 * a host of the table is served by its route (see the file's comment).
 */

ngx_int_t
ngx_http_routes_handler(ngx_http_request_t *r)
{
    off_t                         max_body;
    u_char                       *ns, *name, *upstream, *service;
    ngx_int_t                    *index;
    ngx_str_t                     location, host;
    ngx_uint_t                    i, hash, ssl, code, port;
    ngx_http_routes_host_t       *h;
    ngx_http_routes_route_t      *route;
    ngx_http_routes_shctx_t      *sh;
    ngx_http_routes_srv_conf_t   *rscf;
    ngx_http_routes_main_conf_t  *rmcf;

    rscf = ngx_http_get_module_srv_conf(r, ngx_http_ingressctl_routes_module);

    if (!rscf->serve || r->internal || r != r->main) {
        return NGX_DECLINED;
    }

    host = r->headers_in.server;

    if (host.len == 0) {
        return NGX_DECLINED;
    }

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ingressctl_routes_module);
    sh = ngx_http_routes_table(rmcf);
    if (sh == NULL) {
        return NGX_DECLINED;
    }

#if (NGX_HTTP_SSL)
    ssl = r->connection->ssl ? 1 : 0;
#else
    ssl = 0;
#endif

    hash = ngx_hash_key(host.data, host.len);
    route = NULL;
    ns = name = upstream = service = NULL;
    location.len = 0;
    location.data = NULL;
    max_body = 0;
    code = 0;
    port = 0;

    ngx_rwlock_rlock(&sh->lock);

    h = *ngx_http_routes_find(sh, host.data, host.len, hash);

    if (h == NULL || (ssl && h->certificate.len == 0)) {
        ngx_rwlock_unlock(&sh->lock);
        return NGX_DECLINED;
    }

    ns = ngx_http_routes_dup(r, &h->ns);
    name = ngx_http_routes_dup(r, &h->resource);

    if (!ssl && h->redirect) {
        code = h->redirect;
        port = h->redirect_port;

    } else {
        for (i = 0; i < h->nroutes; i++) {
            route = &h->routes[i];

            if (route->exact
                ? (r->uri.len == route->path.len
                   && ngx_memcmp(r->uri.data, route->path.data,
                                 route->path.len) == 0)
                : (r->uri.len >= route->path.len
                   && ngx_memcmp(r->uri.data, route->path.data,
                                 route->path.len) == 0))
            {
                break;
            }

            route = NULL;
        }

        if (route) {
            upstream = ngx_http_routes_dup(r, &route->upstream);
            service = ngx_http_routes_dup(r, &route->service);
            location.len = route->location.len + 1;
            location.data = ngx_pnalloc(r->pool, location.len);
            if (location.data) {
                location.data[0] = '@';
                ngx_memcpy(location.data + 1, route->location.data,
                           route->location.len);
            }

            max_body = route->max_body;
        }
    }

    ngx_rwlock_unlock(&sh->lock);

    if (ns == NULL || name == NULL
        || (route && (upstream == NULL || service == NULL
                      || location.data == NULL)))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    index = rmcf->index;

    ngx_http_routes_set(r, index[NGX_HTTP_ROUTES_VAR_TYPE],
                        ngx_http_routes_ingress.data,
                        ngx_http_routes_ingress.len);
    ngx_http_routes_set(r, index[NGX_HTTP_ROUTES_VAR_NAME], name,
                        ngx_strlen(name));
    ngx_http_routes_set(r, index[NGX_HTTP_ROUTES_VAR_NAMESPACE], ns,
                        ngx_strlen(ns));

    if (code) {
        return ngx_http_routes_redirect(r, code, port);
    }

    if (route == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }

    ngx_http_routes_set(r, index[NGX_HTTP_ROUTES_VAR_SERVICE], service,
                        ngx_strlen(service));
    ngx_http_routes_set(r, index[NGX_HTTP_ROUTES_VAR_UPSTREAM], upstream,
                        ngx_strlen(upstream));

    /* what the location's client_max_body_size does before its phases */

    if (max_body && r->headers_in.content_length_n != -1
        && !r->discard_body && max_body < r->headers_in.content_length_n)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "client intended to send too large body: %O bytes",
                      r->headers_in.content_length_n);

        r->expect_tested = 1;
        (void) ngx_http_discard_request_body(r);

        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    (void) ngx_http_named_location(r, &location);

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


ngx_int_t
ngx_http_routes_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    us->peer.init = ngx_http_routes_init_peer;

    return NGX_OK;
}


/* `ingressctl-routed`: the request goes on with its route's upstream. */

ngx_int_t
ngx_http_routes_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_str_t                      name;
    ngx_http_variable_value_t     *v;
    ngx_http_upstream_srv_conf_t  *target;
    ngx_http_routes_main_conf_t   *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ingressctl_routes_module);
    v = &r->variables[rmcf->index[NGX_HTTP_ROUTES_VAR_UPSTREAM]];

    if (!v->valid || v->not_found || v->len == 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "ingressctl_routes_upstream: the request has no route");
        return NGX_ERROR;
    }

    name.data = v->data;
    name.len = v->len;

    target = ngx_http_routes_upstream(rmcf, &name);

    if (target == NULL || target->peer.init == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "ingressctl_routes_upstream: no upstream \"%V\"", &name);
        return NGX_ERROR;
    }

    r->upstream->upstream = target;
#if (NGX_HTTP_SSL)
    r->upstream->ssl_name = target->host;
#endif

    return target->peer.init(r, target);
}


ngx_int_t
ngx_http_routes_unset_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    v->not_found = 1;

    return NGX_OK;
}


#if (NGX_HTTP_SSL)

/* The TLS host the connection's SNI names, with the read lock held;
 * NULL (and no lock) when there is none. */

static ngx_http_routes_host_t *
ngx_http_routes_sni_host(ngx_connection_t *c,
    ngx_http_routes_main_conf_t *rmcf, ngx_http_routes_shctx_t **shp)
{
    u_char                   *p, lower[256];
    size_t                    len;
    const char               *name;
    ngx_http_routes_host_t   *h;
    ngx_http_routes_shctx_t  *sh;

    sh = ngx_http_routes_table(rmcf);
    if (sh == NULL || c->ssl == NULL) {
        return NULL;
    }

    name = SSL_get_servername(c->ssl->connection, TLSEXT_NAMETYPE_host_name);
    if (name == NULL) {
        return NULL;
    }

    len = ngx_strlen(name);
    if (len == 0 || len > sizeof(lower)) {
        return NULL;
    }

    p = (u_char *) name;
    ngx_strlow(lower, p, len);

    if (lower[len - 1] == '.') {
        len--;      /* as NGINX's host validation drops it */
    }

    ngx_rwlock_rlock(&sh->lock);

    h = *ngx_http_routes_find(sh, lower, len, ngx_hash_key(lower, len));

    if (h == NULL || h->certificate.len == 0) {
        ngx_rwlock_unlock(&sh->lock);
        return NULL;
    }

    *shp = sh;

    return h;
}

#endif


ngx_int_t
ngx_http_routes_certificate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
#if (NGX_HTTP_SSL)
    u_char                       *p;
    ngx_http_routes_host_t       *h;
    ngx_http_routes_shctx_t      *sh;
    ngx_http_routes_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ingressctl_routes_module);
    sh = NULL;

    h = ngx_http_routes_sni_host(r->connection, rmcf, &sh);

    if (h) {
        p = ngx_pnalloc(r->pool, h->certificate.len);
        if (p) {
            ngx_memcpy(p, h->certificate.data, h->certificate.len);
            v->len = h->certificate.len;
        }

        ngx_rwlock_unlock(&sh->lock);

        if (p == NULL) {
            return NGX_ERROR;
        }

        v->data = p;
        v->valid = 1;
        v->no_cacheable = 0;
        v->not_found = 0;

        return NGX_OK;
    }
#endif

    v->len = 0;
    v->data = (u_char *) "";
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


#if (NGX_HTTP_SSL && defined SSL_CTRL_SET_TLSEXT_HOSTNAME)

/*
 * NGINX's server name callback, but a TLS host of the table is not refused
 * by the routes server's ssl_reject_handshake: it has no server block, so
 * its handshake selects that server.
 */

int
ngx_http_routes_servername(ngx_ssl_conn_t *ssl_conn, int *ad, void *arg)
{
    int                           rc;
    ngx_flag_t                    saved;
    ngx_connection_t             *c;
    ngx_http_connection_t        *hc;
    ngx_http_routes_host_t       *h;
    ngx_http_routes_shctx_t      *sh;
    ngx_http_ssl_srv_conf_t      *sscf;
    ngx_http_routes_main_conf_t  *rmcf;

    c = ngx_ssl_get_connection(ssl_conn);
    hc = c->data;

    if (hc == NULL || hc->addr_conf == NULL
        || hc->addr_conf->default_server == NULL)
    {
        return ngx_http_ssl_servername(ssl_conn, ad, arg);
    }

    rmcf = hc->addr_conf->default_server->ctx->main_conf[
                                  ngx_http_ingressctl_routes_module.ctx_index];
    sh = NULL;

    h = ngx_http_routes_sni_host(c, rmcf, &sh);

    if (h == NULL) {
        return ngx_http_ssl_servername(ssl_conn, ad, arg);
    }

    ngx_rwlock_unlock(&sh->lock);

    if (rmcf->server != hc->addr_conf->default_server) {
        return ngx_http_ssl_servername(ssl_conn, ad, arg);
    }

    sscf = hc->addr_conf->default_server->ctx->srv_conf[
                                                ngx_http_ssl_module.ctx_index];

    saved = sscf->reject_handshake;
    sscf->reject_handshake = 0;

    rc = ngx_http_ssl_servername(ssl_conn, ad, arg);

    sscf->reject_handshake = saved;

    return rc;
}

#endif
