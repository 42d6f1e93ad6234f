/*
 * ingressctl's routes: the API that replaces hosts of the table (POST) and
 * lists it (GET); see ngx_http_ingressctl_routes_module.c.
 *
 * A POST body is lines of fields separated by spaces, percent-encoded as in
 * the configuration:
 *
 *   host <name> <namespace> <resource> <certificate|-> <redirect> <port>
 *   route <exact|prefix> <path> <location> <upstream> <service> <max-body>
 *   delete <name>
 *
 * A `host` line and the `route` lines after it replace that host as a whole
 * (or add it); `delete` removes one (a host not in the table is no error).
 * The body is checked completely, and the memory of every new host
 * reserved, before anything changes: an error answers 400 (syntax), 404 (an
 * unknown upstream or named location), 409 (a host twice) or 507 (the zone
 * is full) and changes nothing.  GET lists the table in the same format.
 */

#include "ngx_http_ingressctl_routes.h"


static void ngx_http_routes_api_body(ngx_http_request_t *r);


static ngx_int_t
ngx_http_routes_api_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_buf_t *b)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    r->headers_out.status = status;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "text/plain");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    if (b->last == b->pos) {
        r->header_only = 1;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_routes_api_error(ngx_http_request_t *r, ngx_uint_t status,
    u_char *msg)
{
    size_t      len;
    ngx_buf_t  *b;

    len = ngx_strlen(msg);

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->pos, msg, len);
    *b->last++ = '\n';

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "ingressctl_routes: %s", msg);

    return ngx_http_routes_api_send(r, status, b);
}


/* A field as the API and the configuration write it. */

static u_char *
ngx_http_routes_encode(u_char *p, ngx_str_t *s)
{
    u_char      c;
    ngx_uint_t  i;

    static u_char  hex[] = "0123456789ABCDEF";

    if (s->len == 0) {
        *p++ = '-';
        return p;
    }

    for (i = 0; i < s->len; i++) {
        c = s->data[i];

        if (c <= ' ' || c >= 0x7f || c == '%' || c == ';' || c == '{'
            || c == '}' || c == '"' || c == '\'' || c == '#' || c == '\\')
        {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];

        } else {
            *p++ = c;
        }
    }

    return p;
}


static ngx_int_t
ngx_http_routes_api_list(ngx_http_request_t *r)
{
    size_t                        len;
    ngx_buf_t                    *b;
    ngx_uint_t                    i, k;
    ngx_http_routes_host_t       *h;
    ngx_http_routes_route_t      *route;
    ngx_http_routes_shctx_t      *sh;
    ngx_http_routes_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ingressctl_routes_module);

    if (!rmcf->enabled || rmcf->shm_zone == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }

    sh = ((ngx_slab_pool_t *) rmcf->shm_zone->shm.addr)->data;

    ngx_rwlock_rlock(&sh->lock);

    len = 0;

    for (i = 0; i < sh->nbuckets; i++) {
        for (h = sh->buckets[i]; h; h = h->next) {
            len += sizeof("host   -  0 65535\n") + 3 * h->name.len
                   + 3 * h->ns.len + 3 * h->resource.len
                   + 3 * h->certificate.len;

            for (k = 0; k < h->nroutes; k++) {
                route = &h->routes[k];
                len += sizeof("route prefix      -9223372036854775808\n")
                       + 3 * (route->path.len + route->location.len
                              + route->upstream.len + route->service.len);
            }
        }
    }

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        ngx_rwlock_unlock(&sh->lock);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < sh->nbuckets; i++) {
        for (h = sh->buckets[i]; h; h = h->next) {
            b->last = ngx_cpymem(b->last, "host ", 5);
            b->last = ngx_http_routes_encode(b->last, &h->name);
            *b->last++ = ' ';
            b->last = ngx_http_routes_encode(b->last, &h->ns);
            *b->last++ = ' ';
            b->last = ngx_http_routes_encode(b->last, &h->resource);
            *b->last++ = ' ';
            b->last = ngx_http_routes_encode(b->last, &h->certificate);
            b->last = ngx_sprintf(b->last, " %ui %ui\n", h->redirect,
                                  h->redirect_port);

            for (k = 0; k < h->nroutes; k++) {
                route = &h->routes[k];
                b->last = ngx_sprintf(b->last, "route %s ",
                                      route->exact ? "exact" : "prefix");
                b->last = ngx_http_routes_encode(b->last, &route->path);
                *b->last++ = ' ';
                b->last = ngx_http_routes_encode(b->last, &route->location);
                *b->last++ = ' ';
                b->last = ngx_http_routes_encode(b->last, &route->upstream);
                *b->last++ = ' ';
                b->last = ngx_http_routes_encode(b->last, &route->service);
                b->last = ngx_sprintf(b->last, " %O\n", route->max_body);
            }
        }
    }

    ngx_rwlock_unlock(&sh->lock);

    return ngx_http_routes_api_send(r, NGX_HTTP_OK, b);
}


ngx_int_t
ngx_http_routes_api_handler(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    if (r->method == NGX_HTTP_GET) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_routes_api_list(r);
    }

    if (r->method != NGX_HTTP_POST) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_routes_api_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* Splits a line into at most `max` fields; the count, or max + 1. */

static ngx_uint_t
ngx_http_routes_fields(u_char *p, u_char *eol, ngx_str_t *fields,
    ngx_uint_t max)
{
    u_char      *q;
    ngx_uint_t   n;

    n = 0;

    for ( ;; ) {
        while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r')) {
            p++;
        }

        if (p == eol) {
            return n;
        }

        if (n == max) {
            return max + 1;
        }

        for (q = p; q < eol && *q != ' ' && *q != '\t' && *q != '\r'; q++) {
            /* void */
        }

        fields[n].data = p;
        fields[n].len = q - p;
        n++;
        p = q;
    }
}


static ngx_int_t
ngx_http_routes_api_parse(ngx_http_request_t *r, u_char *p, u_char *last,
    ngx_array_t *specs, u_char *buf, size_t len)
{
    char                     *err;
    u_char                   *eol, msg[NGX_MAX_ERROR_STR];
    ngx_int_t                 rc;
    ngx_str_t                 f[8];
    ngx_uint_t                n, line;
    ngx_http_routes_spec_t   *spec;
    ngx_http_routes_route_t  *route;

    spec = NULL;
    line = 0;

    while (p < last) {
        line++;

        eol = ngx_strlchr(p, last, '\n');
        if (eol == NULL) {
            eol = last;
        }

        n = ngx_http_routes_fields(p, eol, f, 7);
        p = eol + 1;

        if (n == 0) {
            continue;
        }

        err = NULL;

        if (f[0].len == 4 && ngx_strncmp(f[0].data, "host", 4) == 0
            && n == 7)
        {
            spec = ngx_array_push(specs);
            if (spec == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_routes_parse_host(r->pool, &f[1], spec, msg,
                                            sizeof(msg), &err);

        } else if (f[0].len == 5 && ngx_strncmp(f[0].data, "route", 5) == 0
                   && spec != NULL && !spec->remove)
        {
            route = ngx_array_push(&spec->routes);
            if (route == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_routes_parse_route(r->pool, &f[1], n - 1, route,
                                             msg, sizeof(msg), &err);

        } else if (f[0].len == 6 && ngx_strncmp(f[0].data, "delete", 6) == 0
                   && n == 2)
        {
            spec = ngx_array_push(specs);
            if (spec == NULL) {
                return NGX_ERROR;
            }

            ngx_memzero(spec, sizeof(ngx_http_routes_spec_t));
            spec->remove = 1;

            rc = ngx_http_routes_decode(r->pool, &f[1], &spec->name);
            if (rc == NGX_DECLINED || spec->name.len == 0) {
                err = "invalid host name";
                rc = NGX_DECLINED;
            }

        } else if (f[0].len == 5 && ngx_strncmp(f[0].data, "route", 5) == 0) {
            err = "a route line needs a host line before it";
            rc = NGX_DECLINED;

        } else {
            err = "a line is \"host\" with 6 fields, \"route\" with 6 or "
                  "\"delete\" with 1";
            rc = NGX_DECLINED;
        }

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED) {
            ngx_snprintf(buf, len, "line %ui: %s%Z", line,
                         err ? err : "invalid");
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


static void
ngx_http_routes_api_body(ngx_http_request_t *r)
{
    char                          *err;
    u_char                        *p, *last, msg[NGX_MAX_ERROR_STR];
    size_t                         len;
    ngx_buf_t                     *b;
    ngx_int_t                      rc;
    ngx_uint_t                     i, k, hash, changed, removed;
    ngx_chain_t                   *cl;
    ngx_array_t                    specs;
    ngx_slab_pool_t               *shpool;
    ngx_http_routes_host_t        *h, **hp, **fresh, **old;
    ngx_http_routes_spec_t        *spec;
    ngx_http_routes_shctx_t       *sh;
    ngx_http_routes_main_conf_t   *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ingressctl_routes_module);

    if (!rmcf->enabled || rmcf->shm_zone == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_NOT_FOUND);
        return;
    }

    if (r->request_body == NULL || r->request_body->temp_file) {
        ngx_http_finalize_request(r, ngx_http_routes_api_error(r,
                                  NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                  (u_char *) "the body must fit in "
                                  "client_body_buffer_size"));
        return;
    }

    len = 0;
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        len += cl->buf->last - cl->buf->pos;
    }

    p = ngx_pnalloc(r->pool, len + 1);
    if (p == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    last = p;
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        last = ngx_cpymem(last, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }

    if (ngx_array_init(&specs, r->pool, 16, sizeof(ngx_http_routes_spec_t))
        != NGX_OK)
    {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rc = ngx_http_routes_api_parse(r, p, last, &specs, msg, sizeof(msg));

    if (rc == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_finalize_request(r, ngx_http_routes_api_error(r,
                                  NGX_HTTP_BAD_REQUEST, msg));
        return;
    }

    /* 1. every host checked, none twice */

    spec = specs.elts;

    for (i = 0; i < specs.nelts; i++) {
        ngx_strlow(spec[i].name.data, spec[i].name.data, spec[i].name.len);

        for (k = 0; k < i; k++) {
            if (spec[k].name.len == spec[i].name.len
                && ngx_memcmp(spec[k].name.data, spec[i].name.data,
                              spec[i].name.len) == 0)
            {
                ngx_snprintf(msg, sizeof(msg), "host \"%V\" is given twice%Z",
                             &spec[i].name);
                ngx_http_finalize_request(r, ngx_http_routes_api_error(r,
                                          NGX_HTTP_CONFLICT, msg));
                return;
            }
        }

        if (spec[i].remove) {
            continue;
        }

        err = ngx_http_routes_check(rmcf, &spec[i], msg, sizeof(msg));

        if (err != NULL) {
            ngx_http_finalize_request(r, ngx_http_routes_api_error(r,
                           ngx_strstr(err, "invalid") ? NGX_HTTP_BAD_REQUEST
                           : ngx_strstr(err, "twice") ? NGX_HTTP_CONFLICT
                           : NGX_HTTP_NOT_FOUND, (u_char *) err));
            return;
        }
    }

    /* 2. the memory of every new host, or nothing */

    shpool = (ngx_slab_pool_t *) rmcf->shm_zone->shm.addr;
    sh = shpool->data;

    fresh = ngx_pcalloc(r->pool, (specs.nelts + 1) * sizeof(void *));
    old = ngx_pcalloc(r->pool, (specs.nelts + 1) * sizeof(void *));
    if (fresh == NULL || old == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    for (i = 0; i < specs.nelts; i++) {
        if (spec[i].remove) {
            continue;
        }

        p = ngx_slab_alloc(shpool, ngx_http_routes_host_size(&spec[i]));

        if (p == NULL) {
            for (k = 0; k < i; k++) {
                if (fresh[k]) {
                    ngx_slab_free(shpool, fresh[k]);
                }
            }

            ngx_snprintf(msg, sizeof(msg), "the routes zone is full; a "
                         "reload makes room%Z");
            ngx_http_finalize_request(r, ngx_http_routes_api_error(r,
                                      NGX_HTTP_INSUFFICIENT_STORAGE, msg));
            return;
        }

        fresh[i] = ngx_http_routes_host_build(p, &spec[i]);
    }

    /* 3. the change, at once for every reader */

    changed = 0;
    removed = 0;

    ngx_rwlock_wlock(&sh->lock);

    for (i = 0; i < specs.nelts; i++) {
        hash = ngx_hash_key(spec[i].name.data, spec[i].name.len);
        hp = ngx_http_routes_find(sh, spec[i].name.data, spec[i].name.len,
                                  hash);
        h = *hp;

        if (fresh[i]) {
            fresh[i]->next = h ? h->next : NULL;
            *hp = fresh[i];
            sh->routes += fresh[i]->nroutes;
            changed++;

            if (h == NULL) {
                sh->hosts++;
            }

        } else if (h) {
            *hp = h->next;
            sh->hosts--;
            removed++;
        }

        if (h) {
            sh->routes -= h->nroutes;
            old[i] = h;
        }
    }

    sh->updates++;

    ngx_rwlock_unlock(&sh->lock);

    for (i = 0; i < specs.nelts; i++) {
        if (old[i]) {
            ngx_slab_free(shpool, old[i]);
        }
    }

    b = ngx_create_temp_buf(r->pool, 96);
    if (b == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    b->last = ngx_sprintf(b->last, "ok %ui hosts set, %ui removed\n",
                          changed, removed);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "ingressctl_routes: %ui hosts set, %ui removed", changed,
                  removed);

    ngx_http_finalize_request(r, ngx_http_routes_api_send(r, NGX_HTTP_OK, b));
}
