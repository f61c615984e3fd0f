import CoreMetrics
import HTTPWire
import Locking
import NetCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The gateway's response buffering (`server.buffering`, nginx's `proxy_buffering`): the settings responses start
/// with (replaced by a reload), the bytes held in memory and in temporary files, all responses together, and the
/// metrics about them. One per runtime; each buffered response is a ``BufferedBodyRelay``.
final class ResponseBuffering: Sendable {
    /// What one response is buffered with: the settings when it started.
    struct Plan: Sendable {
        /// Bytes held in memory for the client before the rest goes to the file (the client stream's high-water mark).
        let memory: Int
        /// The largest the response's file may grow.
        let maxFileSize: Int64
        /// Where its file is made.
        let directory: String
    }

    /// Why a response stopped being buffered before its end: the rest goes at the client's pace.
    enum Overflow: String {
        /// Its file reached `max_temp_file_size`.
        case fileSize = "max_temp_file_size"
        /// The files of all responses reached `max_temp_total`.
        case total = "max_temp_total"
        /// The file could not be made or written (a full disk); the reason is logged.
        case error = "temp_file_error"
    }

    private let settings: Locked<BufferingConfig>
    /// Bytes in temporary files now (reserved before each write, given back as files are emptied or closed).
    private let diskBytes = Atomic<Int64>(0)
    /// Bytes held in memory for buffered responses' clients now (as each relay last saw its buffers).
    private let memoryBytes = Atomic<Int64>(0)
    private let spilledCounter: CoreMetrics.Counter
    private let overflowCounters: [Overflow: CoreMetrics.Counter]
    private let memoryGauge: Meter
    private let diskGauge: Meter
    private let logger: @Sendable (String, String) -> Void

    /// - Parameter logger: told (message, reason) when a temporary file cannot be made or written; never a name.
    init(_ config: BufferingConfig, telemetry: Telemetry, logger: @escaping @Sendable (String, String) -> Void) {
        settings = Locked(config)
        let factory = telemetry.metricsFactory
        spilledCounter = CoreMetrics.Counter(label: Metric.bufferSpilled, factory: factory)
        var overflows: [Overflow: CoreMetrics.Counter] = [:]
        for cause in [Overflow.fileSize, .total, .error] {
            overflows[cause] = CoreMetrics.Counter(
                label: Metric.bufferOverflows, dimensions: [("cause", cause.rawValue)],
                factory: factory)
        }
        overflowCounters = overflows
        memoryGauge = Meter(label: Metric.bufferedBytes, dimensions: [("where", "memory")], factory: factory)
        diskGauge = Meter(label: Metric.bufferedBytes, dimensions: [("where", "disk")], factory: factory)
        memoryGauge.set(0.0)
        diskGauge.set(0.0)
        self.logger = logger
    }

    /// The settings a response starting now is buffered with.
    func plan() -> Plan {
        settings.withLock { Plan(memory: $0.memory, maxFileSize: $0.maxTempFileSize, directory: $0.tempDirectory) }
    }

    /// Whether a long upstream answer with `upstreamHeaders` on a route whose `buffering` is `route` is buffered: the
    /// upstream's `X-Accel-Buffering: yes` or `no` decides (as in nginx); else a `text/event-stream` answer (server-sent
    /// events, which must reach the client as they come) is not; else the route's setting.
    static func applies(route: Bool, upstreamHeaders: HTTPFields?) -> Bool {
        if let word = upstreamHeaders?.first(name: "X-Accel-Buffering") {
            if word.trimmingSpaces().lowercased() == "yes" { return true }
            if word.trimmingSpaces().lowercased() == "no" { return false }
        }
        if let type = upstreamHeaders?.first(name: "Content-Type"),
            type.trimmingSpaces().lowercased().hasPrefix("text/event-stream")
        {
            return false
        }
        return route
    }

    /// Takes a reloaded configuration's settings (for responses that start from now on); a new directory is swept.
    func update(_ config: BufferingConfig) {
        let previous = settings.withLock { settings in
            defer { settings = config }
            return settings.tempDirectory
        }
        if previous != config.tempDirectory { _ = TemporaryBufferFile.sweep(config.tempDirectory) }
    }

    /// Reserves `count` bytes of temporary file space under `max_temp_total`; false (nothing reserved) past it.
    func reserveDisk(_ count: Int64) -> Bool {
        let limit = settings.withLock { $0.maxTempTotal }
        var current = diskBytes.load(ordering: .relaxed)
        while true {
            guard current + count <= limit else { return false }
            let (exchanged, original) = diskBytes.compareExchange(
                expected: current, desired: current + count,
                ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back `count` bytes reserved with ``reserveDisk(_:)``.
    func releaseDisk(_ count: Int64) {
        guard count > 0 else { return }
        diskBytes.subtract(count, ordering: .relaxed)
    }

    /// Bytes held in memory changed by `delta`.
    func adjustMemory(by delta: Int) {
        guard delta != 0 else { return }
        memoryBytes.add(Int64(delta), ordering: .relaxed)
    }

    /// A response began to use a temporary file.
    func spilled() { spilledCounter.increment() }

    /// A response stopped being buffered (see ``Overflow``).
    func overflowed(_ cause: Overflow) { overflowCounters[cause]?.increment() }

    /// A temporary file could not be made or written: logged with the reason (the file has no name to give).
    func fileFailed(_ error: any Error) {
        logger(
            "cannot buffer a response in a temporary file; the rest goes at the client's pace",
            (error as? SystemError)?.description ?? "\(error)")
    }

    /// Bytes in temporary files now.
    var bytesOnDisk: Int64 { diskBytes.load(ordering: .relaxed) }

    /// Bytes held in memory for buffered responses now.
    var bytesInMemory: Int64 { memoryBytes.load(ordering: .relaxed) }

    /// Sets the gauges (at each scrape of `/metrics`).
    func updateGauges() {
        memoryGauge.set(Double(max(0, bytesInMemory)))
        diskGauge.set(Double(max(0, bytesOnDisk)))
    }

    /// Removes what a crash left in the directory, and checks that a temporary file can be made there (on the calling
    /// thread: start-up, never on a loop).
    /// - Throws: ``GatewayStartError`` naming the key and the reason.
    func prepareDirectory() throws {
        let directory = settings.withLock { $0.tempDirectory }
        _ = TemporaryBufferFile.sweep(directory)
        do {
            _ = try TemporaryBufferFile.makeNow(in: directory)
        } catch {
            throw GatewayStartError(
                "server.buffering.temp_dir: cannot make a temporary file in \(directory): "
                    + ((error as? SystemError).map { String(cString: strerror($0.errno)) } ?? "\(error)"))
        }
    }
}
