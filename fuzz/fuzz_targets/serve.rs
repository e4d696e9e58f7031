//! `memhook serve`'s request reading: the head, the target's query, and the
//! body as a `/hook` and a `/hook/batch` body. Any bytes: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    memhook_server::fuzz_request(data);
});
