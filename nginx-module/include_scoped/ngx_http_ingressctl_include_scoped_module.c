/*
 * ingressctl's scoped include: `include`, with each file's upstreams found
 * by that file alone while NGINX reads it.
 *
 *   http {
 *       upstream shared { ... }             # before: seen by every file
 *       ingressctl_include_scoped conf.d/res-*.conf;
 *   }
 *
 * NGINX checks every `upstream` block for a duplicate, and finds the
 * upstream of every `proxy_pass` / `grpc_pass`, by scanning the list of all
 * upstreams declared so far; and it checks every `listen` for a duplicate by
 * scanning every server that listens on that address.  One file per
 * resource, each with its own upstreams and servers, makes those scans grow
 * with the number of resources, and the load with its square: 10,000
 * Ingresses spend half of `nginx -t` there, 20,000 three quarters.  This
 * directive includes the files its mask names (in the same order as
 * `include`) and, while each file is read, shows NGINX's upstream list only
 * the upstreams declared before the directive and those of that file, and
 * each address's server list only the servers of that file and those before
 * the directive, so every scan is short.  After each file its upstreams and
 * servers go back to the end of those lists, so after the last file they
 * hold everything, in declaration order, before anything else reads them.
 *
 * Guarantees:
 * - A file's `proxy_pass` to its own upstreams, or to one declared before
 *   the directive, finds the same upstream as `include` would.  An upstream
 *   name declared by an `upstream` block in one file and named in another
 *   (by a block or a reference) fails the load with an [emerg] naming both
 *   places, e.g. `duplicate upstream "x" in b.conf:3 (also in a.conf:1)`:
 *   never a silently different upstream.  Names are compared as NGINX
 *   does (case-insensitively).
 * - A `listen` names the same address twice in one server block is refused
 *   as NGINX refuses it (a server block is read within one file); which
 *   server is an address's default is unchanged (NGINX records it apart
 *   from the list).
 * - Upstreams NGINX creates for plain addresses (`proxy_pass
 *   http://10.0.0.1:80`) may be created once per file instead of once: each
 *   is an independent copy of the same servers, as a second block would be.
 * - Cheap: each upstream is entered once into a tree of names when its
 *   file ends; the addresses (a few) are walked once per file.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


typedef struct {
    ngx_rbtree_node_t               node;      /* key: hash of the name */
    ngx_str_t                       name;      /* lower case */
    ngx_http_upstream_srv_conf_t   *uscf;      /* the first one seen */
    ngx_uint_t                      created;   /* by an upstream block */
} ngx_http_include_scoped_name_t;


/* the servers of one listen address the files added, out of its list */
typedef struct {
    ngx_uint_t                      port;      /* index in cmcf->ports */
    ngx_uint_t                      addr;      /* index in port->addrs */
    ngx_uint_t                      base;      /* servers before it */
    ngx_array_t                     kept;      /* ngx_http_core_srv_conf_t * */
} ngx_http_include_scoped_addr_t;


typedef struct {
    ngx_uint_t                      base;      /* upstreams before it */
    ngx_http_upstream_srv_conf_t  **before;    /* those, in their order */
    ngx_array_t                     kept;      /* upstreams the files added */
    ngx_rbtree_t                    names;     /* of the kept upstreams */
    ngx_array_t                     addrs;     /* of listen addresses */
} ngx_http_include_scoped_ctx_t;


static char *ngx_http_include_scoped(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_include_scoped_file(ngx_conf_t *cf, ngx_str_t *file,
    ngx_http_include_scoped_ctx_t *ctx);
static ngx_int_t ngx_http_include_scoped_keep(ngx_conf_t *cf,
    ngx_http_include_scoped_ctx_t *ctx);
static ngx_int_t ngx_http_include_scoped_keep_servers(ngx_conf_t *cf,
    ngx_http_include_scoped_ctx_t *ctx);
static ngx_int_t ngx_http_include_scoped_restore(
    ngx_http_include_scoped_ctx_t *ctx, ngx_conf_t *cf);
static ngx_http_include_scoped_addr_t *ngx_http_include_scoped_addr(
    ngx_conf_t *cf, ngx_http_include_scoped_ctx_t *ctx, ngx_uint_t port,
    ngx_uint_t addr, ngx_uint_t base);
static void ngx_http_include_scoped_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);


static ngx_command_t  ngx_http_include_scoped_commands[] = {

    { ngx_string("ingressctl_include_scoped"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_include_scoped,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ingressctl_include_scoped_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_include_scoped_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_include_scoped_module_ctx, /* module context */
    ngx_http_include_scoped_commands,      /* module directives */
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


static char *
ngx_http_include_scoped(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char                           *rv;
    ngx_int_t                       n;
    ngx_str_t                      *value, file, name;
    ngx_uint_t                      i, j;
    ngx_glob_t                      gl;
    ngx_rbtree_node_t               sentinel;
    ngx_http_conf_port_t           *port;
    ngx_http_conf_addr_t           *addr;
    ngx_http_core_main_conf_t      *cmcf;
    ngx_http_include_scoped_ctx_t   ctx;
    ngx_http_upstream_main_conf_t  *umcf;

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /*
     * What is declared before the directive stays visible to every file, in
     * its order (ingressctl_upstream_front may move a file's upstream to the
     * front of the list, and one of these behind it).
     */
    ctx.base = umcf->upstreams.nelts;
    ctx.before = ngx_palloc(cf->temp_pool, (ctx.base + 1)
                            * sizeof(ngx_http_upstream_srv_conf_t *));
    if (ctx.before == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(ctx.before, umcf->upstreams.elts,
               ctx.base * sizeof(ngx_http_upstream_srv_conf_t *));

    if (ngx_array_init(&ctx.kept, cf->temp_pool, 1024,
                       sizeof(ngx_http_upstream_srv_conf_t *))
        != NGX_OK
        || ngx_array_init(&ctx.addrs, cf->temp_pool, 8,
                          sizeof(ngx_http_include_scoped_addr_t))
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_rbtree_init(&ctx.names, &sentinel, ngx_http_include_scoped_insert);

    if (cmcf->ports) {
        port = cmcf->ports->elts;
        for (i = 0; i < cmcf->ports->nelts; i++) {
            addr = port[i].addrs.elts;
            for (j = 0; j < port[i].addrs.nelts; j++) {
                if (ngx_http_include_scoped_addr(cf, &ctx, i, j,
                                                 addr[j].servers.nelts)
                    == NULL)
                {
                    return NGX_CONF_ERROR;
                }
            }
        }
    }

    value = cf->args->elts;
    file = value[1];

    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (strpbrk((char *) file.data, "*?[") == NULL) {
        rv = ngx_http_include_scoped_file(cf, &file, &ctx);

    } else {
        ngx_memzero(&gl, sizeof(ngx_glob_t));

        gl.pattern = file.data;
        gl.log = cf->log;
        gl.test = 1;

        if (ngx_open_glob(&gl) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               ngx_open_glob_n " \"%s\" failed", file.data);
            return NGX_CONF_ERROR;
        }

        rv = NGX_CONF_OK;

        for ( ;; ) {
            n = ngx_read_glob(&gl, &name);

            if (n != NGX_OK) {
                break;
            }

            file.len = name.len++;
            file.data = ngx_pstrdup(cf->pool, &name);
            if (file.data == NULL) {
                rv = NGX_CONF_ERROR;
                break;
            }

            rv = ngx_http_include_scoped_file(cf, &file, &ctx);

            if (rv != NGX_CONF_OK) {
                break;
            }
        }

        ngx_close_glob(&gl);
    }

    /* everything back, in declaration order, also after a failure */

    if (ngx_http_include_scoped_restore(&ctx, cf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return rv;
}


static char *
ngx_http_include_scoped_file(ngx_conf_t *cf, ngx_str_t *file,
    ngx_http_include_scoped_ctx_t *ctx)
{
    char       *rv;
    ngx_int_t   rc;

    rv = ngx_conf_parse(cf, file);

    rc = ngx_http_include_scoped_keep(cf, ctx);

    if (ngx_http_include_scoped_keep_servers(cf, ctx) != NGX_OK
        || rc != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return rv;
}


/*
 * Moves the upstreams the file added (after the base) out of NGINX's list,
 * and refuses a name an upstream block of another file has.
 */

static ngx_int_t
ngx_http_include_scoped_keep(ngx_conf_t *cf,
    ngx_http_include_scoped_ctx_t *ctx)
{
    u_char                           lower[256], *low;
    ngx_int_t                        rc;
    ngx_uint_t                       i, j, created, key;
    ngx_rbtree_node_t               *node, *sentinel;
    ngx_http_upstream_srv_conf_t   **uscfp, **slot, *uscf;
    ngx_http_include_scoped_name_t  *entry, *other;
    ngx_http_upstream_main_conf_t   *umcf;

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);

    uscfp = umcf->upstreams.elts;
    rc = NGX_OK;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        uscf = uscfp[i];

        for (j = 0; j < ctx->base; j++) {
            if (ctx->before[j] == uscf) {
                break;
            }
        }

        if (j < ctx->base) {
            continue;      /* declared before the directive */
        }

        slot = ngx_array_push(&ctx->kept);
        if (slot == NULL) {
            return NGX_ERROR;
        }

        *slot = uscf;

        if (rc != NGX_OK) {
            continue;      /* kept whole; the load fails anyway */
        }

        if (uscf->host.len <= sizeof(lower)) {
            low = lower;

        } else {
            low = ngx_pnalloc(cf->temp_pool, uscf->host.len);
            if (low == NULL) {
                return NGX_ERROR;
            }
        }

        ngx_strlow(low, uscf->host.data, uscf->host.len);
        key = ngx_hash_key(low, uscf->host.len);
        created = (uscf->flags & NGX_HTTP_UPSTREAM_CREATE) ? 1 : 0;

        node = ctx->names.root;
        sentinel = ctx->names.sentinel;
        entry = NULL;

        while (node != sentinel) {
            if (key != node->key) {
                node = (key < node->key) ? node->left : node->right;
                continue;
            }

            other = (ngx_http_include_scoped_name_t *) node;

            if (other->name.len == uscf->host.len
                && ngx_memcmp(other->name.data, low, uscf->host.len) == 0)
            {
                entry = other;
                break;
            }

            node = (ngx_memn2cmp(low, other->name.data, uscf->host.len,
                                 other->name.len) < 0)
                   ? node->left : node->right;
        }

        if (entry != NULL) {
            if (created || entry->created) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "duplicate upstream \"%V\" in %s:%ui "
                              "(also in %s:%ui; ingressctl_include_scoped "
                              "shows an upstream block to its own file only)",
                              &uscf->host, uscf->file_name, uscf->line,
                              entry->uscf->file_name, entry->uscf->line);
                rc = NGX_ERROR;
            }

            continue;
        }

        entry = ngx_palloc(cf->temp_pool,
                           sizeof(ngx_http_include_scoped_name_t));
        if (entry == NULL) {
            return NGX_ERROR;
        }

        entry->name.len = uscf->host.len;
        entry->name.data = ngx_pnalloc(cf->temp_pool, uscf->host.len);
        if (entry->name.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(entry->name.data, low, uscf->host.len);
        entry->uscf = uscf;
        entry->created = created;
        entry->node.key = key;

        ngx_rbtree_insert(&ctx->names, &entry->node);
    }

    ngx_memcpy(umcf->upstreams.elts, ctx->before,
               ctx->base * sizeof(ngx_http_upstream_srv_conf_t *));
    umcf->upstreams.nelts = ctx->base;

    return rc;
}


/* Moves the servers the file added to each listen address out of its list. */

static ngx_int_t
ngx_http_include_scoped_keep_servers(ngx_conf_t *cf,
    ngx_http_include_scoped_ctx_t *ctx)
{
    ngx_uint_t                        i, j, k;
    ngx_http_conf_port_t             *port;
    ngx_http_conf_addr_t             *addr;
    ngx_http_core_srv_conf_t        **servers, **slot;
    ngx_http_core_main_conf_t        *cmcf;
    ngx_http_include_scoped_addr_t   *a;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    if (cmcf->ports == NULL) {
        return NGX_OK;
    }

    port = cmcf->ports->elts;

    for (i = 0; i < cmcf->ports->nelts; i++) {
        addr = port[i].addrs.elts;

        for (j = 0; j < port[i].addrs.nelts; j++) {
            a = ngx_http_include_scoped_addr(cf, ctx, i, j, 0);
            if (a == NULL) {
                return NGX_ERROR;
            }

            servers = addr[j].servers.elts;

            for (k = a->base; k < addr[j].servers.nelts; k++) {
                slot = ngx_array_push(&a->kept);
                if (slot == NULL) {
                    return NGX_ERROR;
                }

                *slot = servers[k];
            }

            if (addr[j].servers.nelts > a->base) {
                addr[j].servers.nelts = a->base;
            }
        }
    }

    return NGX_OK;
}


/* The record of a listen address; `base` is used when it is new. */

static ngx_http_include_scoped_addr_t *
ngx_http_include_scoped_addr(ngx_conf_t *cf,
    ngx_http_include_scoped_ctx_t *ctx, ngx_uint_t port, ngx_uint_t addr,
    ngx_uint_t base)
{
    ngx_uint_t                       i;
    ngx_http_include_scoped_addr_t  *a;

    a = ctx->addrs.elts;

    for (i = 0; i < ctx->addrs.nelts; i++) {
        if (a[i].port == port && a[i].addr == addr) {
            return &a[i];
        }
    }

    a = ngx_array_push(&ctx->addrs);
    if (a == NULL) {
        return NULL;
    }

    a->port = port;
    a->addr = addr;
    a->base = base;

    if (ngx_array_init(&a->kept, cf->temp_pool, 1024,
                       sizeof(ngx_http_core_srv_conf_t *))
        != NGX_OK)
    {
        return NULL;
    }

    return a;
}


static ngx_int_t
ngx_http_include_scoped_restore(ngx_http_include_scoped_ctx_t *ctx,
    ngx_conf_t *cf)
{
    ngx_uint_t                        i, k;
    ngx_http_conf_port_t             *port;
    ngx_http_conf_addr_t             *addr;
    ngx_http_core_srv_conf_t        **servers, **server;
    ngx_http_core_main_conf_t        *cmcf;
    ngx_http_upstream_srv_conf_t    **uscfp, **slot;
    ngx_http_include_scoped_addr_t   *a;
    ngx_http_upstream_main_conf_t    *umcf;

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    uscfp = ctx->kept.elts;

    for (i = 0; i < ctx->kept.nelts; i++) {
        slot = ngx_array_push(&umcf->upstreams);
        if (slot == NULL) {
            return NGX_ERROR;
        }

        *slot = uscfp[i];
    }

    a = ctx->addrs.elts;

    for (i = 0; i < ctx->addrs.nelts; i++) {
        if (a[i].kept.nelts == 0) {
            continue;
        }

        port = cmcf->ports->elts;
        addr = port[a[i].port].addrs.elts;
        servers = a[i].kept.elts;

        for (k = 0; k < a[i].kept.nelts; k++) {
            server = ngx_array_push(&addr[a[i].addr].servers);
            if (server == NULL) {
                return NGX_ERROR;
            }

            *server = servers[k];
        }
    }

    return NGX_OK;
}


static void
ngx_http_include_scoped_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t               **p;
    ngx_http_include_scoped_name_t   *n, *t;

    for ( ;; ) {
        n = (ngx_http_include_scoped_name_t *) node;
        t = (ngx_http_include_scoped_name_t *) temp;

        if (node->key != temp->key) {
            p = (node->key < temp->key) ? &temp->left : &temp->right;

        } else {
            p = (ngx_memn2cmp(n->name.data, t->name.data, n->name.len,
                              t->name.len) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}
