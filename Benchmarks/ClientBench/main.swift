// ClientBench: drives N keep-alive connections against one URL for D seconds with our HTTPClient and prints
// requests/s, latency percentiles and CPU µs per request (getrusage, all threads of this process).
//
//   ClientBench --url http://127.0.0.1:18180/ [--connections 50] [--duration 5] [--threads 1]
//               [--warmup 1] [--max-requests 20000000] [--http2 never|always] [--global-executor]
//
// The tasks run on the client's event loops (`executorPreference`), as a server handler calling upstreams from its
// loop does: a request and its continuation stay on one thread. `--global-executor` runs them on Swift's global
// executor instead, which adds a thread hop each way per request.
//
// `--http2 always` speaks h2c with prior knowledge: N tasks multiplexed over one connection.
//
// Concurrency = N tasks, each looping `execute()` until the deadline, so at most N requests are in flight and the
// client's pool (one loop, maxConnectionsPerOrigin >= N) keeps N connections open. Bounded three ways: the deadline,
// a per-request deadline (deadline + 5 s), and --max-requests in total. Stops a task after 100 errors.
// Loopback only. Output: one JSON line on stdout, a human summary on stderr.

import HTTPClientCore
import HTTPWire
import NetCore

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var url = "http://127.0.0.1:18180/"
    var connections = 50
    var duration = 5.0
    var threads = 1
    var warmup = 1.0
    var maxRequests = 20_000_000
    var http2 = HTTPClient.Configuration.HTTP2Mode.auto
    var onLoops = true

    init(_ args: [String]) {
        func value(_ flag: String) -> String? {
            guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
            return args[i + 1]
        }
        if let v = value("--url") { url = v }
        if let v = value("--connections").flatMap(Int.init) { connections = max(1, v) }
        if let v = value("--duration").flatMap(Double.init) { duration = min(max(0.1, v), 600) }
        if let v = value("--threads").flatMap(Int.init) { threads = max(1, v) }
        if let v = value("--warmup").flatMap(Double.init) { warmup = min(max(0, v), 60) }
        if let v = value("--max-requests").flatMap(Int.init) { maxRequests = max(1, v) }
        if let v = value("--http2").flatMap(HTTPClient.Configuration.HTTP2Mode.init(rawValue:)) { http2 = v }
        if args.contains("--global-executor") { onLoops = false }
    }
}

struct TaskResult: Sendable {
    var ok = 0
    var non200 = 0
    var errors = 0
    var lastError = ""
    var latenciesNs: [UInt64] = []
}

/// Writes `text` to standard error (write(2): no shared `FILE *` under strict concurrency).
func warn(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

/// `text` with `\` and `"` escaped for a JSON string.
func jsonEscaped(_ text: String) -> String {
    var out = ""
    for ch in text {
        if ch == "\\" || ch == "\"" { out.append("\\") }
        if ch == "\n" {
            out.append(" ")
            continue
        }
        out.append(ch)
    }
    return out
}

func cpuMicros() -> Double {
    var usage = rusage()
    _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func us(_ t: timeval) -> Double { Double(t.tv_sec) * 1e6 + Double(t.tv_usec) }
    return us(usage.ru_utime) + us(usage.ru_stime)
}

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Runs `connections` tasks that loop `execute()` until `untilNs`; latencies are kept only when `record`.
func drive(
    client: HTTPClient, request: HTTPClientRequest, connections: Int, untilNs: UInt64, perTaskCap: Int,
    record: Bool, loops: EventLoopGroup?
) async -> [TaskResult] {
    await withTaskGroup(of: TaskResult.self) { group in
        for _ in 0..<connections {
            group.addTask(executorPreference: loops?.next()) {
                var result = TaskResult()
                if record { result.latenciesNs.reserveCapacity(min(perTaskCap, 400_000)) }
                let hardDeadline =
                    ContinuousClock.now + .nanoseconds(Int64(untilNs &- min(untilNs, monotonicNs())))
                    + .seconds(5)
                var done = 0
                while done < perTaskCap, result.errors < 100 {
                    let t0 = monotonicNs()
                    if t0 >= untilNs { break }
                    do {
                        let response = try await client.execute(request, deadline: hardDeadline)
                        if response.status == 200 { result.ok += 1 } else { result.non200 += 1 }
                    } catch {
                        result.errors += 1
                        result.lastError = "\(error)"
                    }
                    if record { result.latenciesNs.append(monotonicNs() &- t0) }
                    done += 1
                }
                return result
            }
        }
        var all: [TaskResult] = []
        for await r in group { all.append(r) }
        return all
    }
}

func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let index = min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
    return Double(sorted[max(0, index)]) / 1000
}

let options = Options(CommandLine.arguments)
guard options.url.hasPrefix("http://127.") else {
    warn("ClientBench: loopback http://127.x URLs only\n")
    exit(2)
}
Socket.ignoreSIGPIPE()
let group = try EventLoopGroup(threads: options.threads)
var configuration = HTTPClient.Configuration()
configuration.maxConnectionsPerOrigin = max(configuration.maxConnectionsPerOrigin, options.connections)
configuration.responseTimeout = .seconds(10)
configuration.http2 = options.http2
let client = HTTPClient(configuration: configuration, group: group)
let request = try HTTPClientRequest(url: options.url)
let perTaskCap = max(1, options.maxRequests / options.connections)

// Warm-up: opens the connections and lets the allocator and caches settle; not counted.
if options.warmup > 0 {
    let until = monotonicNs() + UInt64(options.warmup * 1e9)
    let warm = await drive(
        client: client, request: request, connections: options.connections, untilNs: until,
        perTaskCap: perTaskCap, record: false, loops: options.onLoops ? group : nil)
    let errors = warm.reduce(0) { $0 + $1.errors }
    if errors > 0 {
        warn("ClientBench: \(errors) errors during warm-up, e.g. \(warm.first { $0.errors > 0 }!.lastError)\n")
    }
}

let cpu0 = cpuMicros()
let t0 = monotonicNs()
let results = await drive(
    client: client, request: request, connections: options.connections,
    untilNs: t0 + UInt64(options.duration * 1e9), perTaskCap: perTaskCap, record: true,
    loops: options.onLoops ? group : nil)
let t1 = monotonicNs()
let cpu1 = cpuMicros()

let ok = results.reduce(0) { $0 + $1.ok }
let non200 = results.reduce(0) { $0 + $1.non200 }
let errors = results.reduce(0) { $0 + $1.errors }
let total = ok + non200 + errors
let seconds = Double(t1 - t0) / 1e9
var latencies = results.flatMap(\.latenciesNs)
latencies.sort()
let rps = Double(ok + non200) / seconds
let cpuPerReq = total > 0 ? (cpu1 - cpu0) / Double(total) : 0
let lastError = results.first { $0.errors > 0 }?.lastError ?? ""
let escapedError = jsonEscaped(lastError)

func f(_ x: Double, _ digits: Int = 1) -> String {
    let scale = pow(10.0, Double(digits))
    return String((x * scale).rounded() / scale)
}
print(
    "{\"tool\":\"ClientBench\",\"url\":\"\(options.url)\",\"http2\":\"\(options.http2.rawValue)\",\"connections\":\(options.connections),"
        + "\"threads\":\(options.threads),\"seconds\":\(f(seconds, 3)),\"requests\":\(total),\"ok\":\(ok),"
        + "\"non200\":\(non200),\"errors\":\(errors),\"rps\":\(f(rps)),\"cpu_us_per_req\":\(f(cpuPerReq, 2)),"
        + "\"cpu_s\":\(f((cpu1 - cpu0) / 1e6, 3)),\"p50_us\":\(f(percentile(latencies, 50))),"
        + "\"p99_us\":\(f(percentile(latencies, 99))),\"max_us\":\(f(percentile(latencies, 100))),"
        + "\"last_error\":\"\(escapedError)\"}")
warn(
    "ClientBench: \(total) requests in \(f(seconds, 2)) s = \(f(rps, 0)) req/s, "
        + "CPU \(f(cpuPerReq, 2)) µs/req, p50 \(f(percentile(latencies, 50), 0)) µs, "
        + "p99 \(f(percentile(latencies, 99), 0)) µs, non-200 \(non200), errors \(errors)\n")
client.shutdown()
exit(errors > 0 && ok == 0 ? 1 : 0)
