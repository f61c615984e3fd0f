/// An upstream's `health_check`: the probed path, the rounds' interval and timeout, the thresholds and headers.
extension Builder {
    func healthCheck(_ entry: YAMLReader.Entry) -> HealthCheckConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "path", "interval", "timeout", "unhealthy_after", "healthy_after", "headers"
                ])
        else { return nil }
        var ok = true
        var path = "/"
        if let item = reader.requireKey(map, "path"), let value = reader.string(item) {
            if value.hasPrefix("/") && !value.contains(where: { $0 == " " || $0 == "#" || $0.isNewline }) {
                path = value
            } else {
                reader.report(
                    line: reader.line(of: item.value), item.path,
                    "must be an origin-form path starting with '/' (e.g. /healthz)")
                ok = false
            }
        } else {
            ok = false
        }
        var check = HealthCheckConfig(path: path)
        if let item = map["interval"] {
            if let value = reader.duration(item) { check.interval = value } else { ok = false }
        }
        if let item = map["timeout"] {
            if let value = reader.duration(item) { check.timeout = value } else { ok = false }
        }
        if let item = map["unhealthy_after"] {
            if let value = reader.int(item, in: 1...100) { check.unhealthyAfter = value } else { ok = false }
        }
        if let item = map["healthy_after"] {
            if let value = reader.int(item, in: 1...100) { check.healthyAfter = value } else { ok = false }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { check.headers = headers } else { ok = false }
        }
        return ok ? check : nil
    }
}
