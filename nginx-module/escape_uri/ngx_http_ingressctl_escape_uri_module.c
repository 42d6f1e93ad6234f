/*
 * ingressctl's escaped request URI: the variable
 *
 *   $ingressctl_escaped_request_uri
 *
 * is $request_uri (the request line's URI, with its arguments) percent-encoded
 * as one URI component: every byte but the unreserved characters of RFC 3986
 * (A-Z a-z 0-9 - . _ ~) becomes %XX, so the whole URI travels as the value of
 * one query argument.  ingress-nginx's `auth-signin` redirect carries the
 * original URL so (`rd=$scheme://$http_host$escaped_request_uri`, its NGINX's
 * set-misc `set_escape_uri`): the sign-in service gets /a?x=1&y=2 back whole,
 * not /a?x=1 and a stray argument y.
 *
 * Guarantees:
 * - The value is computed when it is used, from the main request's URI as the
 *   client sent it (r->unparsed_uri, what $request_uri is), after an internal
 *   redirect (error_page 401 to a named location) too.
 * - Only unreserved characters are left as they are (NGINX's
 *   NGX_ESCAPE_URI_COMPONENT table: the same set as set-misc's
 *   set_escape_uri), so nothing in the value can end the argument or the URL.
 * - No directive, no configuration, no per-request state beyond the value.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


static ngx_int_t ngx_http_ingressctl_escape_uri_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_ingressctl_escaped_request_uri(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_str_t  ngx_http_ingressctl_escaped_request_uri_name =
    ngx_string("ingressctl_escaped_request_uri");


static ngx_http_module_t  ngx_http_ingressctl_escape_uri_module_ctx = {
    ngx_http_ingressctl_escape_uri_add_variables,  /* preconfiguration */
    NULL,                                          /* postconfiguration */

    NULL,                                          /* create main configuration */
    NULL,                                          /* init main configuration */

    NULL,                                          /* create server configuration */
    NULL,                                          /* merge server configuration */

    NULL,                                          /* create location configuration */
    NULL                                           /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_escape_uri_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_escape_uri_module_ctx,    /* module context */
    NULL,                                          /* module directives */
    NGX_HTTP_MODULE,                               /* module type */
    NULL,                                          /* init master */
    NULL,                                          /* init module */
    NULL,                                          /* init process */
    NULL,                                          /* init thread */
    NULL,                                          /* exit thread */
    NULL,                                          /* exit process */
    NULL,                                          /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_ingressctl_escape_uri_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_http_ingressctl_escaped_request_uri_name,
                                NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_ingressctl_escaped_request_uri;

    return NGX_OK;
}


static ngx_int_t
ngx_http_ingressctl_escaped_request_uri(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char     *p;
    size_t      len;
    uintptr_t   escape;
    ngx_str_t  *uri;

    uri = &r->main->unparsed_uri;

    if (uri->data == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    escape = ngx_escape_uri(NULL, uri->data, uri->len, NGX_ESCAPE_URI_COMPONENT);
    len = uri->len + 2 * escape;

    p = ngx_pnalloc(r->pool, len ? len : 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (escape) {
        ngx_escape_uri(p, uri->data, uri->len, NGX_ESCAPE_URI_COMPONENT);

    } else {
        ngx_memcpy(p, uri->data, uri->len);
    }

    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}
