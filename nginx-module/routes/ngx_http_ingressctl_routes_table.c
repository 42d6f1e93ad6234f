/*
 * ingressctl's routes: the table's hosts, parsed from the configuration or
 * the API, checked, built in one allocation each and found by name; see
 * ngx_http_ingressctl_routes_module.c for what they guarantee.
 */

#include "ngx_http_ingressctl_routes.h"


/* Percent-decodes a field ("%20" -> " "); "-" stays "-". */

ngx_int_t
ngx_http_routes_decode(ngx_pool_t *pool, ngx_str_t *in, ngx_str_t *out)
{
    u_char      *p, *d;
    ngx_int_t    hi, lo;
    ngx_uint_t   i;

    if (in->len > NGX_HTTP_ROUTES_MAX_FIELD) {
        return NGX_DECLINED;
    }

    if (ngx_strlchr(in->data, in->data + in->len, '%') == NULL) {
        *out = *in;
        return NGX_OK;
    }

    d = ngx_pnalloc(pool, in->len);
    if (d == NULL) {
        return NGX_ERROR;
    }

    out->data = d;
    p = in->data;

    for (i = 0; i < in->len; i++) {
        if (p[i] != '%') {
            *d++ = p[i];
            continue;
        }

        if (i + 2 >= in->len) {
            return NGX_DECLINED;
        }

        hi = ngx_hextoi(&p[i + 1], 1);
        lo = ngx_hextoi(&p[i + 2], 1);

        if (hi == NGX_ERROR || lo == NGX_ERROR) {
            return NGX_DECLINED;
        }

        *d++ = (u_char) (hi * 16 + lo);
        i += 2;
    }

    out->len = d - out->data;

    return NGX_OK;
}


/*
 * One route from its fields: exact|prefix, path, named location, upstream,
 * service, the body limit in bytes.  Checks what needs no configuration.
 */

ngx_int_t
ngx_http_routes_parse_route(ngx_pool_t *pool, ngx_str_t *args,
    ngx_uint_t nargs, ngx_http_routes_route_t *route, u_char *buf,
    size_t len, char **err)
{
    ngx_int_t   rc;
    ngx_uint_t  i;
    ngx_str_t  *fields[4];

    *err = NULL;

    if (nargs != 6) {
        ngx_snprintf(buf, len, "a route takes 6 fields, not %ui%Z", nargs);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    if (args[0].len == 5 && ngx_strncmp(args[0].data, "exact", 5) == 0) {
        route->exact = 1;

    } else if (args[0].len == 6
               && ngx_strncmp(args[0].data, "prefix", 6) == 0)
    {
        route->exact = 0;

    } else {
        ngx_snprintf(buf, len, "invalid route type \"%V\": exact or prefix%Z",
                     &args[0]);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    fields[0] = &route->path;
    fields[1] = &route->location;
    fields[2] = &route->upstream;
    fields[3] = &route->service;

    for (i = 0; i < 4; i++) {
        rc = ngx_http_routes_decode(pool, &args[i + 1], fields[i]);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED || fields[i]->len == 0) {
            ngx_snprintf(buf, len, "invalid route field \"%V\"%Z",
                         &args[i + 1]);
            *err = (char *) buf;
            return NGX_DECLINED;
        }
    }

    if (route->path.data[0] != '/') {
        ngx_snprintf(buf, len, "route path \"%V\" does not start with "
                     "\"/\"%Z", &route->path);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    route->max_body = ngx_atoof(args[5].data, args[5].len);

    if (route->max_body == NGX_ERROR) {
        ngx_snprintf(buf, len, "invalid body limit \"%V\"%Z", &args[5]);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_routes_parse_host(ngx_pool_t *pool, ngx_str_t *args,
    ngx_http_routes_spec_t *spec, u_char *buf, size_t len, char **err)
{
    ngx_int_t    rc, n;
    ngx_uint_t   i;
    ngx_str_t   *fields[4];

    *err = NULL;
    ngx_memzero(spec, sizeof(ngx_http_routes_spec_t));

    fields[0] = &spec->name;
    fields[1] = &spec->ns;
    fields[2] = &spec->resource;
    fields[3] = &spec->certificate;

    for (i = 0; i < 4; i++) {
        rc = ngx_http_routes_decode(pool, &args[i], fields[i]);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED || fields[i]->len == 0) {
            ngx_snprintf(buf, len, "invalid host field \"%V\"%Z", &args[i]);
            *err = (char *) buf;
            return NGX_DECLINED;
        }
    }

    if (spec->certificate.len == 1 && spec->certificate.data[0] == '-') {
        spec->certificate.len = 0;
    }

    n = ngx_atoi(args[4].data, args[4].len);

    if (n != 0 && n != 301 && n != 302 && n != 307 && n != 308) {
        ngx_snprintf(buf, len, "invalid redirect code \"%V\"%Z", &args[4]);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    spec->redirect = n;

    n = ngx_atoi(args[5].data, args[5].len);

    if (n < 1 || n > 65535) {
        ngx_snprintf(buf, len, "invalid redirect port \"%V\"%Z", &args[5]);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    spec->redirect_port = n;

    if (spec->redirect && spec->certificate.len == 0) {
        ngx_snprintf(buf, len, "host \"%V\" redirects to https without a "
                     "certificate%Z", &spec->name);
        *err = (char *) buf;
        return NGX_DECLINED;
    }

    if (ngx_array_init(&spec->routes, pool, 4,
                       sizeof(ngx_http_routes_route_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* The memory of one host: itself, its routes, its strings. */

size_t
ngx_http_routes_host_size(ngx_http_routes_spec_t *spec)
{
    size_t                    size;
    ngx_uint_t                i;
    ngx_http_routes_route_t  *r;

    size = sizeof(ngx_http_routes_host_t)
           + spec->routes.nelts * sizeof(ngx_http_routes_route_t)
           + spec->name.len + spec->ns.len + spec->resource.len
           + spec->certificate.len;

    r = spec->routes.elts;

    for (i = 0; i < spec->routes.nelts; i++) {
        size += r[i].path.len + r[i].location.len + r[i].upstream.len
                + r[i].service.len;
    }

    return size;
}


static u_char *
ngx_http_routes_copy(u_char *p, ngx_str_t *dst, ngx_str_t *src)
{
    dst->len = src->len;
    dst->data = p;

    return ngx_cpymem(p, src->data, src->len);
}


/* Builds a host in `mem` (ngx_http_routes_host_size() bytes). */

ngx_http_routes_host_t *
ngx_http_routes_host_build(u_char *mem, ngx_http_routes_spec_t *spec)
{
    u_char                   *p;
    ngx_uint_t                i, k, pass;
    ngx_http_routes_host_t   *h;
    ngx_http_routes_route_t  *src, *dst, t;

    h = (ngx_http_routes_host_t *) mem;
    ngx_memzero(h, sizeof(ngx_http_routes_host_t));

    h->size = ngx_http_routes_host_size(spec);
    h->redirect = spec->redirect;
    h->redirect_port = spec->redirect_port;
    h->nroutes = spec->routes.nelts;
    h->routes = (ngx_http_routes_route_t *) (mem
                                             + sizeof(ngx_http_routes_host_t));

    p = (u_char *) (h->routes + h->nroutes);

    p = ngx_http_routes_copy(p, &h->name, &spec->name);
    ngx_strlow(h->name.data, h->name.data, h->name.len);
    h->hash = ngx_hash_key(h->name.data, h->name.len);

    p = ngx_http_routes_copy(p, &h->ns, &spec->ns);
    p = ngx_http_routes_copy(p, &h->resource, &spec->resource);
    p = ngx_http_routes_copy(p, &h->certificate, &spec->certificate);

    /* exact routes first, then prefixes, each group in the given order */

    src = spec->routes.elts;
    dst = h->routes;
    k = 0;

    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < spec->routes.nelts; i++) {
            if ((pass == 0) != (src[i].exact != 0)) {
                continue;
            }

            dst[k].exact = src[i].exact;
            dst[k].max_body = src[i].max_body;
            p = ngx_http_routes_copy(p, &dst[k].path, &src[i].path);
            p = ngx_http_routes_copy(p, &dst[k].location, &src[i].location);
            p = ngx_http_routes_copy(p, &dst[k].upstream, &src[i].upstream);
            p = ngx_http_routes_copy(p, &dst[k].service, &src[i].service);
            k++;
        }
    }

    /* the prefixes longest first (insertion sort: a host has a few) */

    for (i = 1; i < h->nroutes; i++) {
        for (k = i; k > 0 && !dst[k].exact && !dst[k - 1].exact
                    && dst[k - 1].path.len < dst[k].path.len; k--)
        {
            t = dst[k];
            dst[k] = dst[k - 1];
            dst[k - 1] = t;
        }
    }

    return h;
}


/*
 * Checks a host against the configuration: a host name NGINX accepts, named
 * locations of the routes server, existing upstream blocks, no path twice.
 * NULL when fine, else the message, in buf.
 */

char *
ngx_http_routes_check(ngx_http_routes_main_conf_t *rmcf,
    ngx_http_routes_spec_t *spec, u_char *buf, size_t len)
{
    u_char                     c;
    ngx_uint_t                 i, k, found;
    ngx_http_routes_route_t   *r;
    ngx_http_core_loc_conf_t **clcfp;

    for (i = 0; i < spec->name.len; i++) {
        c = spec->name.data[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_')
        {
            continue;
        }

        ngx_snprintf(buf, len, "invalid host name \"%V\"%Z", &spec->name);
        return (char *) buf;
    }

    if (spec->name.len > 253 || spec->name.data[0] == '.'
        || spec->name.data[spec->name.len - 1] == '.')
    {
        ngx_snprintf(buf, len, "invalid host name \"%V\"%Z", &spec->name);
        return (char *) buf;
    }

    r = spec->routes.elts;

    for (i = 0; i < spec->routes.nelts; i++) {

        for (k = 0; k < i; k++) {
            if (r[k].exact == r[i].exact && r[k].path.len == r[i].path.len
                && ngx_memcmp(r[k].path.data, r[i].path.data, r[i].path.len)
                   == 0)
            {
                ngx_snprintf(buf, len, "host \"%V\" has the %s path \"%V\" "
                             "twice%Z", &spec->name,
                             r[i].exact ? "exact" : "prefix", &r[i].path);
                return (char *) buf;
            }
        }

        found = 0;

        if (rmcf->server && rmcf->server->named_locations) {
            for (clcfp = rmcf->server->named_locations; *clcfp; clcfp++) {
                if ((*clcfp)->name.len == r[i].location.len + 1
                    && ngx_strncmp((*clcfp)->name.data + 1,
                                   r[i].location.data, r[i].location.len)
                       == 0)
                {
                    found = 1;
                    break;
                }
            }
        }

        if (!found) {
            ngx_snprintf(buf, len, "route \"%V\" of host \"%V\": no named "
                         "location \"@%V\" in the server with "
                         "ingressctl_routes_serve%Z", &r[i].path, &spec->name,
                         &r[i].location);
            return (char *) buf;
        }

        if (ngx_http_routes_upstream(rmcf, &r[i].upstream) == NULL) {
            ngx_snprintf(buf, len, "route \"%V\" of host \"%V\": no upstream "
                         "block \"%V\"%Z", &r[i].path, &spec->name,
                         &r[i].upstream);
            return (char *) buf;
        }
    }

    return NULL;
}


ngx_http_upstream_srv_conf_t *
ngx_http_routes_upstream(ngx_http_routes_main_conf_t *rmcf, ngx_str_t *name)
{
    ngx_int_t                    i;
    ngx_uint_t                   hash;
    ngx_http_routes_upstream_t  *u;

    if (rmcf->upstream_buckets == NULL) {
        return NULL;
    }

    hash = ngx_hash_key_lc(name->data, name->len);

    for (i = rmcf->upstream_buckets[hash & rmcf->upstream_mask]; i >= 0;
         i = u->next)
    {
        u = &rmcf->upstreams[i];

        if (u->hash == hash && u->uscf->host.len == name->len
            && ngx_strncasecmp(u->uscf->host.data, name->data, name->len)
               == 0)
        {
            return u->uscf;
        }
    }

    return NULL;
}


/* The slot that holds the host named `name` (lower case), or its bucket's
 * end: *result == NULL when there is no such host. */

ngx_http_routes_host_t **
ngx_http_routes_find(ngx_http_routes_shctx_t *sh, u_char *name, size_t len,
    ngx_uint_t hash)
{
    ngx_http_routes_host_t  **hp;

    for (hp = &sh->buckets[hash & (sh->nbuckets - 1)]; *hp;
         hp = &(*hp)->next)
    {
        if ((*hp)->hash == hash && (*hp)->name.len == len
            && ngx_memcmp((*hp)->name.data, name, len) == 0)
        {
            break;
        }
    }

    return hp;
}
