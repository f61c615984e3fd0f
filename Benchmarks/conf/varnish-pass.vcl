vcl 4.1;
# Varnish as a plain reverse proxy on 127.0.0.1:18092 (port given by common.sh): every request passes to the upstream
# on :18080, nothing is cached.
backend upstream {
    .host = "127.0.0.1";
    .port = "18080";
}
sub vcl_recv {
    return (pass);
}
