import HTTPWire
import NetCore

/// `server` (listeners, TLS, compression, limits, trusted proxies, buffering) and `admin`.
extension Builder {
    func listenList(_ entry: YAMLReader.Entry) -> [ListenAddress]? {
        addressList(entry, kind: "listen", forms: "IP:port, localhost:port or [IPv6]:port", parse: ListenAddress.parse)
    }

    /// A list of at least one address (a single string is accepted), each read by `parse`. `kind` names the addresses
    /// in messages, `forms` the forms accepted.
    func addressList<Address>(
        _ entry: YAMLReader.Entry, kind: String, forms: String,
        parse: (String) -> Address?
    ) -> [Address]? {
        guard let items = reader.list(entry, allowSingle: true) else { return nil }
        if items.isEmpty {
            reader.report(line: reader.line(of: entry.value), entry.path, "must list at least one address")
            return nil
        }
        var result: [Address] = []
        for (index, item) in items.enumerated() {
            guard let address = parse(item.text) else {
                reader.report(
                    line: item.line, "\(entry.path)[\(index)]",
                    "invalid \(kind) address \(item.shown) (use \(forms))")
                continue
            }
            result.append(address)
        }
        return result.count == items.count ? result : nil
    }

    func server(_ entry: YAMLReader.Entry) -> ServerConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "listen", "threads", "http2", "io_uring", "tls", "compression", "limits",
                    "trusted_proxies", "buffering"
                ])
        else { return nil }
        var server = ServerConfig()
        if let item = map["listen"], let value = listenList(item) { server.listen = value }
        if let item = map["threads"], let value = reader.int(item, in: 0...4096) { server.threads = value }
        if let item = map["http2"], let value = reader.bool(item) { server.http2 = value }
        if let item = map["io_uring"], let value = reader.bool(item) { server.ioUring = value }
        if let item = map["tls"],
            let tls = reader.mapping(item.value, item.path, allowed: ["listen", "certificate", "private_key"])
        {
            let listen = reader.requireKey(tls, "listen").flatMap(listenList)
            let certificateEntry = reader.requireKey(tls, "certificate")
            let certificate = certificateEntry.flatMap { existingFile($0) }
            let key = reader.requireKey(tls, "private_key").flatMap { existingFile($0) }
            if let certificateEntry, let certificate, let key,
                let problem = loader.checkServerCertificate(certificate, key)
            {
                reader.report(
                    line: reader.line(of: certificateEntry.value, fallback: certificateEntry.keyLine),
                    certificateEntry.path, problem)
            } else if let listen, let certificate, let key {
                server.tls = ServerTLSConfig(listen: listen, certificate: certificate, privateKey: key)
            }
        }
        if let item = map["compression"],
            let compression = reader.mapping(item.value, item.path, allowed: ["gzip", "min_bytes"])
        {
            if let gzip = compression["gzip"], let value = reader.bool(gzip) { server.compression.gzip = value }
            if let min = compression["min_bytes"], let value = reader.size(min, allowZero: true) {
                server.compression.minBytes = Int(clamping: value)
            }
        }
        if let item = map["limits"] { limits(item, into: &server.limits) }
        if let item = map["trusted_proxies"], let value = trustedProxies(item) { server.trustedProxies = value }
        bufferingSettings(map, into: &server)
        return server
    }

    /// `server.buffering` (see ``BufferingConfigParser``); without it, the default temporary directory is checked.
    func bufferingSettings(_ map: YAMLReader.Entries, into server: inout ServerConfig) {
        if let item = map["buffering"] {
            if let value = BufferingConfigParser.buffering(
                item, reader: reader,
                tempDirectoryProblem: BufferingConfig.tempDirectoryProblemOnDisk)
            {
                server.buffering = value
            }
        } else {
            BufferingConfigParser.checkDefaultTempDirectory(
                line: map.line, reader: reader,
                tempDirectoryProblem: BufferingConfig.tempDirectoryProblemOnDisk)
        }
    }

    /// `server.trusted_proxies`: addresses and CIDR blocks.
    func trustedProxies(_ entry: YAMLReader.Entry) -> [IPBlock]? {
        guard let items = reader.list(entry, allowSingle: true) else { return nil }
        var blocks: [IPBlock] = []
        for (index, item) in items.enumerated() {
            guard let block = IPBlock(parsing: item.text) else {
                reader.report(
                    line: item.line, "\(entry.path)[\(index)]",
                    "invalid address or CIDR block \(item.shown) (use 10.0.0.0/8, 192.0.2.10 or 2001:db8::/32)")
                continue
            }
            blocks.append(block)
        }
        return blocks.count == items.count ? blocks : nil
    }

    func limits(_ entry: YAMLReader.Entry, into limits: inout LimitsConfig) {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "max_header_bytes", "max_headers", "max_body_bytes", "header_timeout", "body_timeout",
                    "idle_timeout",
                    "send_timeout", "max_connections", "drain_timeout", "min_send_rate", "min_receive_rate",
                    "min_rate_window",
                    "max_requests_per_connection"
                ])
        else { return }
        if let item = map["max_header_bytes"], let value = reader.size(item) {
            if value > 1 << 24 {
                reader.report(line: reader.line(of: item.value), item.path, "must be at most 16MiB")
            } else {
                limits.maxHeaderBytes = Int(value)
            }
        }
        if let item = map["max_headers"], let value = reader.int(item, in: 1...100_000) { limits.maxHeaders = value }
        if let item = map["max_body_bytes"], let value = reader.size(item) { limits.maxBodyBytes = value }
        if let item = map["header_timeout"], let value = reader.duration(item) { limits.headerTimeout = value }
        if let item = map["body_timeout"], let value = reader.duration(item) { limits.bodyTimeout = value }
        if let item = map["idle_timeout"], let value = reader.duration(item) { limits.idleTimeout = value }
        if let item = map["send_timeout"], let value = reader.duration(item) { limits.sendTimeout = value }
        if let item = map["max_connections"], let value = reader.int(item, in: 1...10_000_000) {
            limits.maxConnections = value
        }
        if let item = map["drain_timeout"], let value = reader.duration(item) { limits.drainTimeout = value }
        if let item = map["max_requests_per_connection"], let value = reader.int(item, in: 0...1_000_000_000) {
            limits.maxRequestsPerConnection = value == 0 ? .max : value
        }
        minimumRates(map, into: &limits)
    }

    /// `server.limits.min_send_rate`, `min_receive_rate` (sizes per second, `1KiB` or `1KiB/s`; 0 disables) and
    /// `min_rate_window` (a duration).
    private func minimumRates(_ map: YAMLReader.Entries, into limits: inout LimitsConfig) {
        if let item = map["min_send_rate"], let value = rate(item) { limits.minSendRate = value }
        if let item = map["min_receive_rate"], let value = rate(item) { limits.minReceiveRate = value }
        if let item = map["min_rate_window"], let value = reader.duration(item) { limits.minRateWindow = value }
    }

    /// A rate in bytes per second: a size, with or without `/s`; may be 0.
    private func rate(_ entry: YAMLReader.Entry) -> Int64? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        var text = value.text.trimmingSpaces()
        if text.hasSuffix("/s") { text.removeLast(2) }
        guard let rate = ConfigValue.parseSize(text) else {
            reader.report(
                line: value.line, entry.path,
                "invalid rate \(value.shown) (bytes per second: a size such as 1KiB or 1KiB/s; 0 disables)")
            return nil
        }
        return rate
    }

    /// A file path that must exist; resolved against the config file's directory.
    func existingFile(_ entry: YAMLReader.Entry) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        guard !value.text.isEmpty else {
            reader.report(line: value.line, entry.path, "must not be empty")
            return nil
        }
        let resolved = resolve(value.text)
        guard loader.fileExists(resolved) else {
            reader.report(
                line: value.line, entry.path,
                value.fromEnvironment
                    ? "file not found or not readable"
                    : "file not found or not readable: \(resolved)")
            return nil
        }
        return resolved
    }

    func admin(_ entry: YAMLReader.Entry) -> AdminConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["listen"]) else { return nil }
        var admin = AdminConfig()
        if let item = map["listen"], let value = reader.scalar(item.value, item.path) {
            if let address = ListenAddress.parse(value.text) {
                admin.listen = address
            } else {
                reader.report(
                    line: value.line, item.path,
                    "invalid listen address \(value.shown) (use IP:port, localhost:port or [IPv6]:port)")
            }
        }
        return admin
    }
}
