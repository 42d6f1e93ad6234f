
/*
 * ingressctl's dynamic peers: the API that rewrites the slots of dynamic
 * upstreams (POST) and lists what they serve (GET); see
 * ngx_http_ingressctl_dynamic_peers_module.c.
 */

#include "ngx_http_ingressctl_dynamic_peers.h"


typedef struct {
    ngx_http_upstream_srv_conf_t       *uscf;
    ngx_uint_t                          naddrs;
    ngx_addr_t                         *addrs;
} ngx_http_dynamic_peers_update_t;


static void ngx_http_dynamic_peers_api_body(ngx_http_request_t *r);


static ngx_int_t
ngx_http_dynamic_peers_send(ngx_http_request_t *r, ngx_uint_t status,
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
ngx_http_dynamic_peers_error(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *msg)
{
    ngx_buf_t  *b;

    b = ngx_create_temp_buf(r->pool, msg->len + 1);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->pos, msg->data, msg->len);
    *b->last++ = '\n';

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "ingressctl_dynamic_peers: %*s",
                  (size_t) (b->last - b->pos - 1), b->pos);

    return ngx_http_dynamic_peers_send(r, status, b);
}


static ngx_http_upstream_srv_conf_t *
ngx_http_dynamic_peers_find(ngx_str_t *name, ngx_uint_t *dynamic)
{
    ngx_uint_t                           i;
    ngx_http_upstream_srv_conf_t       **uscfp;
    ngx_http_upstream_main_conf_t       *umcf;
    ngx_http_dynamic_peers_srv_conf_t   *dscf;

    umcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->host.len != name->len
            || ngx_strncmp(uscfp[i]->host.data, name->data, name->len) != 0
            || uscfp[i]->srv_conf == NULL)
        {
            continue;
        }

        dscf = ngx_http_conf_upstream_srv_conf(uscfp[i],
                                   ngx_http_ingressctl_dynamic_peers_module);
        *dynamic = dscf->enabled && uscfp[i]->shm_zone != NULL;

        return uscfp[i];
    }

    return NULL;
}


static ngx_int_t
ngx_http_dynamic_peers_list(ngx_http_request_t *r)
{
    size_t                               len;
    ngx_buf_t                           *b;
    ngx_uint_t                           i;
    ngx_http_upstream_rr_peer_t         *peer;
    ngx_http_upstream_rr_peers_t        *peers;
    ngx_http_upstream_srv_conf_t       **uscfp;
    ngx_http_dynamic_peers_main_conf_t  *dmcf;

    dmcf = ngx_http_get_module_main_conf(r,
                                   ngx_http_ingressctl_dynamic_peers_module);
    uscfp = dmcf->upstreams.elts;

    len = 0;
    for (i = 0; i < dmcf->upstreams.nelts; i++) {
        peers = uscfp[i]->peer.data;
        len += uscfp[i]->host.len + 16 + peers->number * (NGX_SOCKADDR_STRLEN + 1);
    }

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < dmcf->upstreams.nelts; i++) {
        peers = uscfp[i]->peer.data;

        b->last = ngx_sprintf(b->last, "%V %ui", &uscfp[i]->host,
                              peers->number);

        ngx_http_upstream_rr_peers_rlock(peers);

        for (peer = peers->peer; peer; peer = peer->next) {
            if (!peer->down) {
                b->last = ngx_sprintf(b->last, " %V", &peer->name);
            }
        }

        ngx_http_upstream_rr_peers_unlock(peers);

        *b->last++ = '\n';
    }

    return ngx_http_dynamic_peers_send(r, NGX_HTTP_OK, b);
}


ngx_int_t
ngx_http_dynamic_peers_api_handler(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    if (r->method == NGX_HTTP_GET) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_dynamic_peers_list(r);
    }

    if (r->method != NGX_HTTP_POST) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_dynamic_peers_api_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static ngx_int_t
ngx_http_dynamic_peers_parse(ngx_http_request_t *r, u_char *p, u_char *last,
    ngx_array_t *updates, ngx_str_t *error, ngx_uint_t *status)
{
    u_char                           *eol, *q;
    ngx_str_t                         name, word;
    ngx_uint_t                        dynamic, k;
    ngx_array_t                       addrs;
    ngx_addr_t                       *addr;
    ngx_http_upstream_rr_peers_t     *peers;
    ngx_http_dynamic_peers_update_t  *u;

    static u_char  errbuf[512];

    error->data = errbuf;

    while (p < last) {
        eol = ngx_strlchr(p, last, '\n');
        if (eol == NULL) {
            eol = last;
        }

        while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r')) {
            p++;
        }

        if (p == eol) {
            p = eol + 1;
            continue;
        }

        for (q = p; q < eol && *q != ' ' && *q != '\t' && *q != '\r'; q++) {
            /* void */
        }

        name.data = p;
        name.len = q - p;

        u = ngx_array_push(updates);
        if (u == NULL) {
            return NGX_ERROR;
        }

        dynamic = 0;
        u->uscf = ngx_http_dynamic_peers_find(&name, &dynamic);

        if (u->uscf == NULL) {
            error->len = ngx_snprintf(errbuf, sizeof(errbuf),
                                      "unknown upstream \"%V\"", &name)
                         - errbuf;
            *status = NGX_HTTP_NOT_FOUND;
            return NGX_DECLINED;
        }

        if (!dynamic) {
            error->len = ngx_snprintf(errbuf, sizeof(errbuf),
                                      "upstream \"%V\" is not dynamic", &name)
                         - errbuf;
            *status = NGX_HTTP_CONFLICT;
            return NGX_DECLINED;
        }

        if (ngx_array_init(&addrs, r->pool, 8, sizeof(ngx_addr_t)) != NGX_OK) {
            return NGX_ERROR;
        }

        p = q;

        for ( ;; ) {
            while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r')) {
                p++;
            }

            if (p == eol) {
                break;
            }

            for (q = p; q < eol && *q != ' ' && *q != '\t' && *q != '\r'; q++)
            {
                /* void */
            }

            word.data = p;
            word.len = q - p;
            p = q;

            addr = ngx_array_push(&addrs);
            if (addr == NULL) {
                return NGX_ERROR;
            }

            if (ngx_parse_addr_port(r->pool, addr, word.data, word.len)
                != NGX_OK
                || ngx_inet_get_port(addr->sockaddr) == 0)
            {
                error->len = ngx_snprintf(errbuf, sizeof(errbuf),
                                          "invalid address \"%V\": an IP "
                                          "address and a port are needed",
                                          &word)
                             - errbuf;
                *status = NGX_HTTP_BAD_REQUEST;
                return NGX_DECLINED;
            }

            /* a duplicate address is served once */

            for (k = 0; k + 1 < addrs.nelts; k++) {
                if (ngx_cmp_sockaddr(((ngx_addr_t *) addrs.elts)[k].sockaddr,
                                     ((ngx_addr_t *) addrs.elts)[k].socklen,
                                     addr->sockaddr, addr->socklen, 1)
                    == NGX_OK)
                {
                    addrs.nelts--;
                    break;
                }
            }
        }

        peers = u->uscf->peer.data;

        if (addrs.nelts > peers->number) {
            error->len = ngx_snprintf(errbuf, sizeof(errbuf),
                                      "upstream \"%V\" has %ui slots, %ui "
                                      "addresses given", &name, peers->number,
                                      addrs.nelts)
                         - errbuf;
            *status = NGX_HTTP_CONFLICT;
            return NGX_DECLINED;
        }

        u->naddrs = addrs.nelts;
        u->addrs = addrs.elts;

        p = eol + 1;
    }

    return NGX_OK;
}


static void
ngx_http_dynamic_peers_reset(ngx_http_upstream_rr_peers_t *peers,
    ngx_http_upstream_rr_peer_t *peer)
{
    peer->current_weight = 0;
    peer->effective_weight = peer->weight;
    peer->fails = 0;
    peer->accessed = 0;
    peer->checked = ngx_time();

#if (NGX_SSL || NGX_COMPAT)
    if (peer->ssl_session) {
        ngx_slab_free(peers->shpool, peer->ssl_session);
        peer->ssl_session = NULL;
        peer->ssl_session_len = 0;
    }
#endif
}


/* The first slot not kept yet, up or down as asked, that has `addr`; n if none. */

static ngx_uint_t
ngx_http_dynamic_peers_find_slot(ngx_http_upstream_rr_peer_t **slot,
    u_char *keep, ngx_uint_t n, ngx_addr_t *addr, ngx_uint_t down)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (!keep[i] && (slot[i]->down != 0) == (down != 0)
            && ngx_cmp_sockaddr(slot[i]->sockaddr, slot[i]->socklen,
                                addr->sockaddr, addr->socklen, 1)
               == NGX_OK)
        {
            return i;
        }
    }

    return n;
}


/* Returns the number of slots whose address changed. */

static ngx_uint_t
ngx_http_dynamic_peers_apply(ngx_http_request_t *r,
    ngx_http_dynamic_peers_update_t *u)
{
    size_t                          len;
    ngx_uint_t                      i, k, n, changed, up;
    ngx_addr_t                     *addr;
    ngx_http_upstream_rr_peer_t    *peer, **slot;
    ngx_http_upstream_rr_peers_t   *peers;

    u_char                         *keep, *placed;

    peers = u->uscf->peer.data;
    n = peers->number;

    slot = ngx_palloc(r->pool, n * sizeof(ngx_http_upstream_rr_peer_t *));
    keep = ngx_pcalloc(r->pool, n + u->naddrs + 1);
    if (slot == NULL || keep == NULL) {
        return 0;
    }

    placed = keep + n;
    changed = 0;

    ngx_http_upstream_rr_peers_wlock(peers);

    for (i = 0, peer = peers->peer; peer && i < n; peer = peer->next, i++) {
        slot[i] = peer;
    }

    /* 1. addresses already served keep their slot */

    for (k = 0; k < u->naddrs; k++) {
        i = ngx_http_dynamic_peers_find_slot(slot, keep, n, &u->addrs[k], 0);

        if (i < n) {
            keep[i] = 1;
            placed[k] = 1;
        }
    }

    /* 2. a down slot that had the address comes back (a Pod ready again) */

    for (k = 0; k < u->naddrs; k++) {
        if (placed[k]) {
            continue;
        }

        i = ngx_http_dynamic_peers_find_slot(slot, keep, n, &u->addrs[k], 1);

        if (i < n) {
            keep[i] = 1;
            placed[k] = 1;
            slot[i]->down = 0;
            ngx_http_dynamic_peers_reset(peers, slot[i]);
        }
    }

    /* 3. the other new addresses take free slots, down ones first */

    for (k = 0; k < u->naddrs; k++) {
        if (placed[k]) {
            continue;
        }

        addr = &u->addrs[k];

        for (i = 0; i < n; i++) {
            if (!keep[i] && slot[i]->down) {
                break;
            }
        }

        if (i == n) {
            for (i = 0; i < n && keep[i]; i++) { /* void */ }
        }

        if (i == n) {
            break;  /* cannot happen: the parser checked the capacity */
        }

        keep[i] = 1;
        placed[k] = 1;
        changed++;

        peer = slot[i];

        len = ngx_min(addr->socklen, sizeof(ngx_sockaddr_t));
        ngx_memcpy(peer->sockaddr, addr->sockaddr, len);
        peer->socklen = len;
        peer->name.len = ngx_sock_ntop(addr->sockaddr, addr->socklen,
                                       peer->name.data, NGX_SOCKADDR_STRLEN,
                                       1);
        peer->down = 0;
        ngx_http_dynamic_peers_reset(peers, peer);
    }

    /* 4. the rest are down */

    up = 0;

    for (i = 0; i < n; i++) {
        if (keep[i]) {
            up++;

        } else {
            slot[i]->down = 1;
        }
    }

    peers->tries = up;

    ngx_http_upstream_rr_peers_unlock(peers);

    return changed;
}


static void
ngx_http_dynamic_peers_api_body(ngx_http_request_t *r)
{
    u_char                           *p, *last;
    size_t                            len;
    ngx_buf_t                        *b;
    ngx_int_t                         rc;
    ngx_str_t                         error;
    ngx_uint_t                        i, status, changed;
    ngx_chain_t                      *cl;
    ngx_array_t                       updates;
    ngx_http_dynamic_peers_update_t  *u;

    static ngx_str_t  too_large =
        ngx_string("the body must fit in client_body_buffer_size");

    if (r->request_body == NULL || r->request_body->temp_file) {
        ngx_http_finalize_request(r, ngx_http_dynamic_peers_error(r,
                                  NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                  &too_large));
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

    if (ngx_array_init(&updates, r->pool, 16,
                       sizeof(ngx_http_dynamic_peers_update_t))
        != NGX_OK)
    {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    status = NGX_HTTP_BAD_REQUEST;
    rc = ngx_http_dynamic_peers_parse(r, p, last, &updates, &error, &status);

    if (rc == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_finalize_request(r, ngx_http_dynamic_peers_error(r, status,
                                                                  &error));
        return;
    }

    u = updates.elts;
    changed = 0;

    for (i = 0; i < updates.nelts; i++) {
        changed += ngx_http_dynamic_peers_apply(r, &u[i]);
    }

    b = ngx_create_temp_buf(r->pool, 64);
    if (b == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    b->last = ngx_sprintf(b->last, "ok %ui upstreams, %ui slots rewritten\n",
                          updates.nelts, changed);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "ingressctl_dynamic_peers: %ui upstreams updated, "
                  "%ui slots rewritten", updates.nelts, changed);

    ngx_http_finalize_request(r,
                              ngx_http_dynamic_peers_send(r, NGX_HTTP_OK, b));
}
