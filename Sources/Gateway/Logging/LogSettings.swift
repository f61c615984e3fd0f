import Locking
import Logging
import Synchronization

/// The logging settings a reload can change while the gateway runs: the level, the format, whether the access log is
/// written, and the names redacted. The gateway's logger and its access log read them for every line, so a reload
/// (``update(_:)``) applies them to the very next one. (The output is opened once: changing it needs a restart.)
package final class LogSettings: Sendable {
    private let levelIndex: Atomic<Int>
    private let jsonFormat: Atomic<Bool>
    private let accessLogOn: Atomic<Bool>
    private let redactorBox: Locked<HeaderRedactor>

    package init(_ logging: LoggingConfig) {
        levelIndex = Atomic(Self.index(of: logging.level))
        jsonFormat = Atomic(logging.format == .json)
        accessLogOn = Atomic(logging.accessLog)
        redactorBox = Locked(HeaderRedactor(names: logging.redactHeaders))
    }

    /// Takes a reloaded configuration's settings.
    package func update(_ logging: LoggingConfig) {
        redactorBox.withLock { $0 = HeaderRedactor(names: logging.redactHeaders) }
        jsonFormat.store(logging.format == .json, ordering: .relaxed)
        accessLogOn.store(logging.accessLog, ordering: .relaxed)
        levelIndex.store(Self.index(of: logging.level), ordering: .relaxed)
    }

    package var level: Logger.Level { Self.levels[levelIndex.load(ordering: .relaxed)] }
    package var json: Bool { jsonFormat.load(ordering: .relaxed) }
    package var accessLog: Bool { accessLogOn.load(ordering: .relaxed) }
    package var redactor: HeaderRedactor { redactorBox.withLock { $0 } }

    /// The levels in order, made once (`allCases` builds its array on every use, and the level is read per line).
    private static let levels = Logger.Level.allCases

    private static func index(of level: Logger.Level) -> Int {
        levels.firstIndex(of: level) ?? 0
    }
}
