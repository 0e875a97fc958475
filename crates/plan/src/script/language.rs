//! What a script may say and how far it may go: the Rhai engine's limits and the symbols it
//! refuses, the same when the plan loads (to compile) and when a user runs a script (the
//! runtime registers belier's helper functions on top).

use rhai::Engine;

/// Most operations one script call may take: a script that loops forever fails its step
/// after about this many, instead of holding its worker thread.
pub const MAX_OPERATIONS: u64 = 1_000_000;
/// Deepest function-call nesting of a script.
const MAX_CALL_LEVELS: usize = 32;
/// Largest string, array and map a script may build.
const MAX_STRING_BYTES: usize = 4 << 20;
const MAX_ARRAY_LEN: usize = 100_000;
const MAX_MAP_LEN: usize = 100_000;

/// A new engine with belier's limits, without its helper functions: enough to compile (syntax
/// only; the AST is engine-independent).
pub fn engine() -> Engine {
    let mut e = Engine::new();
    // No `import` of script files: a plan's scripts reach nothing belier does not give them.
    e.set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    e.disable_symbol("eval");
    // A library does not print: `print` and `debug` go nowhere.
    e.on_print(|_| {});
    e.on_debug(|_, _, _| {});
    e.set_max_operations(MAX_OPERATIONS);
    e.set_max_call_levels(MAX_CALL_LEVELS);
    e.set_max_string_size(MAX_STRING_BYTES);
    e.set_max_array_size(MAX_ARRAY_LEN);
    e.set_max_map_size(MAX_MAP_LEN);
    e
}
