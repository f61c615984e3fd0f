/// `reload`: reloading by itself when the configuration file, or a file it names, changes on disk.
package struct ReloadConfig: Sendable, Equatable {
    /// Watch the configuration file, the files it names (stub bodies, secret files, certificates, CA bundles) and
    /// their directories (a Kubernetes ConfigMap or Secret volume's `..data` swap), and reload as SIGHUP does when
    /// one changes. `serve --watch` turns it on whatever the file says. Default false.
    package var watch = false
    /// How long the files must stay unchanged before the reload: a burst of changes (an editor's save, a volume
    /// update, a certificate and its key) makes one reload. Default 500 ms.
    package var debounce: Duration = .milliseconds(500)

    package init(watch: Bool = false, debounce: Duration = .milliseconds(500)) {
        self.watch = watch
        self.debounce = debounce
    }
}

extension ConfigLoader {
    /// The `reload` section.
    func reload(_ entry: YAMLReader.Entry, reader: YAMLReader) -> ReloadConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["watch", "debounce"]) else { return nil }
        var config = ReloadConfig()
        var ok = true
        if let item = map["watch"] {
            if let value = reader.bool(item) { config.watch = value } else { ok = false }
        }
        if let item = map["debounce"] {
            if let value = reader.duration(item) {
                if value > .seconds(60) {
                    reader.report(line: reader.line(of: item.value), item.path, "must be at most 1m")
                    ok = false
                } else {
                    config.debounce = value
                }
            } else {
                ok = false
            }
        }
        return ok ? config : nil
    }
}
