import Logging

/// `logging`: level, format, access log, output and redacted headers.
extension Builder {
    func logging(_ entry: YAMLReader.Entry) -> LoggingConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: ["level", "format", "access_log", "output", "redact_headers"])
        else { return nil }
        var logging = LoggingConfig()
        if let item = map["level"], let value = reader.scalar(item.value, item.path) {
            if let level = Logger.Level(rawValue: value.text) {
                logging.level = level
            } else {
                reader.report(
                    line: value.line, item.path,
                    "invalid level \(value.shown) (trace, debug, info, notice, warning, error or critical)")
            }
        }
        if let item = map["format"], let value = reader.scalar(item.value, item.path) {
            if let format = LoggingConfig.Format(rawValue: value.text) {
                logging.format = format
            } else {
                reader.report(line: value.line, item.path, "invalid format \(value.shown) (json or text)")
            }
        }
        if let item = map["access_log"], let value = reader.bool(item) { logging.accessLog = value }
        if let item = map["output"], let value = reader.scalar(item.value, item.path) {
            switch value.text {
            case "": reader.report(line: value.line, item.path, "must not be empty")
            case "stdout": logging.output = .stdout
            case "stderr": logging.output = .stderr
            default:
                let path = resolve(value.text)
                if let problem = loader.logOutputProblem(path) {
                    reader.report(line: value.line, item.path, value.fromEnvironment ? problem : "\(problem): \(path)")
                } else {
                    logging.output = .file(path)
                }
            }
        }
        if let item = map["redact_headers"], let values = reader.list(item) {
            var names: [String] = []
            for (index, value) in values.enumerated() {
                if HeaderName.isValid(value.text) {
                    names.append(value.text)
                } else {
                    reader.report(line: value.line, "\(item.path)[\(index)]", "invalid header name \(value.shown)")
                }
            }
            logging.redactHeaders = names
        }
        return logging
    }
}
