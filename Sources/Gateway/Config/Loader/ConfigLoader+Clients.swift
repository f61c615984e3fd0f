/// `clients.api_keys`: the callers named by the key they send.
extension Builder {
    func clients(_ entry: YAMLReader.Entry) -> ClientsConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["api_keys"]) else { return nil }
        var clients = ClientsConfig()
        guard let item = map["api_keys"],
            let apiKeys = reader.mapping(item.value, item.path, allowed: ["header", "keys"])
        else { return clients }
        var config = APIKeysConfig()
        if let header = apiKeys["header"], let value = reader.string(header) {
            if HeaderName.isValid(value) {
                config.header = value
            } else {
                reader.report(line: reader.line(of: header.value), header.path, "invalid header name")
            }
        }
        if let keysEntry = reader.requireKey(apiKeys, "keys"), let keys = reader.stringMap(keysEntry) {
            if keys.isEmpty {
                reader.report(line: reader.line(of: keysEntry.value), keysEntry.path, "must not be empty")
            }
            for key in keys {
                if key.value.text.isEmpty {
                    reader.report(line: key.value.line, key.path, "must not be empty")
                    continue
                }
                if let other = config.keys.first(where: { $0.key.value == key.value.text }) {
                    reader.report(line: key.value.line, key.path, "same key as client '\(other.name)'")
                    continue
                }
                config.keys.append(APIKeysConfig.Client(name: key.key, key: Secret(key.value.text)))
            }
        }
        clients.apiKeys = config
        return clients
    }
}
