// GatewayBench: the gateway's CPU per request with no client socket, in one process.
//
//   GatewayBench --config FILE [--path /json] [--method GET] [--concurrency 50] [--duration 3] [--warmup 1]
//                [--max-requests 2000000]
//
// Loads FILE with the same loader as `moya-gateway serve`, builds the runtime (no listener is bound) and calls its
// request handler directly, from `--concurrency` tasks on the runtime's first event loop, with the head curl sends.
// A stub route measures routing, headers, Moya's pipeline and telemetry without any socket; a proxied route adds the
// upstream exchange through the HTTP client (loopback upstreams only). Prints one JSON line: requests/s, CPU µs per
// request (getrusage of the whole process, all threads) and the status counts.

import Gateway
import HTTPServerCore
import HTTPWire
import NetCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var config = "Configuration/gateway.yaml"
    var path = "/json"
    var method = "GET"
    var concurrency = 50
    var duration = 3.0
    var warmup = 1.0
    var maxRequests = 2_000_000

    init(_ args: [String]) {
        func value(_ flag: String) -> String? {
            guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
            return args[i + 1]
        }
        if let v = value("--config") { config = v }
        if let v = value("--path") { path = v }
        if let v = value("--method") { method = v }
        if let v = value("--concurrency").flatMap(Int.init) { concurrency = min(max(1, v), 1000) }
        if let v = value("--duration").flatMap(Double.init) { duration = min(max(0.1, v), 600) }
        if let v = value("--warmup").flatMap(Double.init) { warmup = min(max(0, v), 60) }
        if let v = value("--max-requests").flatMap(Int.init) { maxRequests = max(1, v) }
    }
}

func cpuMicros() -> Double {
    var usage = rusage()
    _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}

func fail(_ message: String) -> Never {
    let line = Array("GatewayBench: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

/// Runs `concurrency` loops of handler calls on `loop` for `seconds` (or `limit` requests); returns the count and statuses.
func run(_ handler: HTTPServerHandler, loop: EventLoop, options: Options, seconds: Double, limit: Int) async -> (
    Int, [Int: Int]
) {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    let method = HTTPMethod(rawValue: options.method)
    var headers = HTTPFields()
    headers.add(name: "Host", value: "127.0.0.1:8080")
    headers.add(name: "User-Agent", value: "curl/7.88.1")
    headers.add(name: "Accept", value: "*/*")
    let head = HTTPRequestHead(method: method, target: options.path, version: .http1_1, headers: headers)
    let remote = SocketAddress(numericHost: "127.0.0.1", port: 50000)
    let perTask = max(1, limit / options.concurrency)
    return await withTaskGroup(of: (Int, [Int: Int]).self) { group in
        for _ in 0..<options.concurrency {
            group.addTask(executorPreference: loop) {
                var count = 0
                var statuses: [Int: Int] = [:]
                while count < perTask && ContinuousClock.now < deadline {
                    let request = HTTPServerRequest(
                        head: head, body: .complete([]), declaredBodyLength: nil,
                        remoteAddress: remote, isTLS: false, loop: loop)
                    // As the server does: the loop's decision first, then the task's handling when it asks for one.
                    let response: HTTPServerResponse
                    switch handler.decide(request) {
                    case .respond(let immediate): response = immediate
                    case .handle(let context): response = await handler.handle(request, context: context)
                    case .answerLater(let context): response = await handler.answer(later: request, context: context)
                    }
                    if case .stream(let stream) = response.body {
                        do { _ = try await stream.collect(upTo: 1 << 30) } catch { statuses[-1, default: 0] += 1 }
                    }
                    statuses[response.head.status, default: 0] += 1
                    count += 1
                }
                return (count, statuses)
            }
        }
        var total = 0
        var statuses: [Int: Int] = [:]
        for await (count, counts) in group {
            total += count
            statuses.merge(counts, uniquingKeysWith: +)
        }
        return (total, statuses)
    }
}

let options = Options(CommandLine.arguments)
let config: GatewayConfig
switch ConfigLoader().load(path: options.config, environment: [:]) {
case .success(let loaded): config = loaded
case .failure(let errors): fail("\(errors)")
}
let runtime: GatewayRuntime
do {
    runtime = try GatewayRuntime(config: config)
} catch {
    fail("\(error)")
}
let loop = runtime.group.loops[0]
if options.warmup > 0 {
    _ = await run(runtime.handler, loop: loop, options: options, seconds: options.warmup, limit: options.maxRequests)
}
let cpu0 = cpuMicros()
let start = ContinuousClock.now
let (count, statuses) = await run(
    runtime.handler, loop: loop, options: options, seconds: options.duration,
    limit: options.maxRequests)
let elapsed = start.duration(to: .now)
let cpu = cpuMicros() - cpu0
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let statusText = statuses.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
print(
    "{\"path\":\"\(options.path)\",\"requests\":\(count),\"rps\":\(Int(Double(count) / seconds)),"
        + "\"cpu_us_per_request\":\(Double(Int(cpu / Double(max(count, 1)) * 100)) / 100),\"statuses\":{\(statusText)}}"
)
