vcl 4.1;
# Varnish with its built-in VCL only, on 127.0.0.1:18094 (port given by common.sh), in front of the upstream on
# :18080: it caches, and its waiting list coalesces concurrent misses for one object. Benchmarks/coalesce.sh measures
# the gateway's `coalesce: true` beside it.
backend upstream {
    .host = "127.0.0.1";
    .port = "18080";
}
