import Foundation
import Locking
import Logging

/// Reloads a running gateway's configuration file, one reload at a time, as SIGHUP and the file watch ask: the file
/// is loaded as `check` loads it (noting the files it reads), then taken (``GatewayRuntime/reload(with:)``) or
/// rejected with its problems. With `serve --watch` or `reload.watch: true` it keeps a ``ConfigFileWatcher`` on the
/// files the last loads read, and turns it on or off, or changes its debounce, as reloads change `reload`.
package final class ConfigReloader: Sendable {
    /// Why a reload runs.
    package enum Trigger: Sendable {
        case signal
        case filesChanged
    }

    private let runtime: GatewayRuntime
    private let configPath: String
    private let flag: Bool
    private let onChange: @Sendable () -> Void
    private let adjust: (@Sendable (GatewayConfig) -> GatewayConfig)?
    private let state: Locked<(watcher: ConfigFileWatcher?, files: Set<String>)>

    /// - Parameters:
    ///   - config: the configuration running now; `files`: the files its load read.
    ///   - watch: `serve --watch`: watch whatever the file's `reload.watch` says.
    ///   - adjust: applied to every configuration a reload loads, before it is taken (`spy` adds its recording).
    ///   - onFilesChanged: called (on the watcher's thread) when a watched file changed: ask for a reload.
    package init(
        runtime: GatewayRuntime, configPath: String, config: GatewayConfig, files: Set<String>, watch: Bool,
        adjust: (@Sendable (GatewayConfig) -> GatewayConfig)? = nil,
        onFilesChanged: @escaping @Sendable () -> Void
    ) {
        self.runtime = runtime
        self.configPath = configPath
        self.flag = watch
        self.onChange = onFilesChanged
        self.adjust = adjust
        state = Locked((nil, files.union([configPath])))
        apply(config)
    }

    /// Loads the file again and takes it, or logs why not (the running configuration stays).
    package func reload(_ trigger: Trigger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        if trigger == .filesChanged {
            runtime.logger.notice("configuration files changed; reloading", metadata: ["config": .string(configPath)])
        }
        let files = ReferencedFiles()
        switch ConfigLoader().recording(into: files).load(path: configPath, environment: environment) {
        case .success(let loaded):
            let config = adjust?(loaded) ?? loaded
            if runtime.reload(with: config) {
                watched(files.all, replacing: true)
                apply(config)
            } else {
                watched(files.all, replacing: false)
            }
        case .failure(let errors):
            runtime.reloadRejected(problems: errors.problems.map(\.description))
            // A file the failed load looked for (a secret not written yet) is watched too: its arrival reloads.
            watched(files.all, replacing: false)
        }
    }

    /// The files watched now (when the watch is on).
    package var watchedFiles: Set<String> { state.withLock { $0.files } }

    /// Notes the files a load read: they replace the watched set after a load that was taken, and join it after one
    /// that was not (the running configuration still uses the old ones).
    private func watched(_ files: Set<String>, replacing: Bool) {
        state.withLock { state in
            state.files = replacing ? files.union([configPath]) : state.files.union(files)
        }
    }

    /// Starts, stops or re-aims the watch for `config` (the configuration now running).
    private func apply(_ config: GatewayConfig) {
        let enabled = flag || config.reload.watch
        let (watcher, files, started) = state.withLock { state -> (ConfigFileWatcher?, Set<String>, Bool) in
            if !enabled {
                state.watcher?.stop()
                state.watcher = nil
                return (nil, state.files, false)
            }
            if let watcher = state.watcher {
                watcher.setDebounce(config.reload.debounce)
                return (watcher, state.files, false)
            }
            do {
                state.watcher = try ConfigFileWatcher(debounce: config.reload.debounce, onChange: onChange)
            } catch {
                runtime.logger.error(
                    "cannot watch the configuration files; reload with SIGHUP",
                    metadata: [
                        "reason": .string("\(error)")
                    ])
            }
            return (state.watcher, state.files, state.watcher != nil)
        }
        guard let watcher else { return }
        let unwatched = watcher.watch(files)
        if started {
            runtime.logger.notice(
                "watching the configuration files: a change reloads them",
                metadata: [
                    "files": .array(files.sorted().map { .string($0) }),
                    "debounce_ms": .string("\(Int(config.reload.debounce.seconds * 1000))")
                ])
        }
        if !unwatched.isEmpty {
            runtime.logger.warning(
                "cannot watch these directories",
                metadata: [
                    "directories": .array(unwatched.map { .string($0) })
                ])
        }
    }

    /// Stops the watch (the drain).
    package func stop() {
        state.withLock { state in
            state.watcher?.stop()
            state.watcher = nil
        }
    }
}
