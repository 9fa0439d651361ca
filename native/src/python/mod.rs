//! The Python extension `govern._native` (built with the `python` feature).
//!
//! Python digests ranges of a log (the GIL released) that stay in Rust until a `Total`
//! merges them, and reads the merged classes one at a time as `ClassFigures` (named
//! fields, `figures.rs`): no object per event crosses the boundary. Files are mapped
//! here (`FileMap`), so only the core decides which pages it may drop.

mod figures;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::filemap::{Bytes, FileMap};
use crate::range::{Bad, Filters, KeepClass, KeepEvent, RangeDigest, RangeOptions};
use crate::total::Total;
use figures::{ClassFigures, FitFigures, MetricFigures, RunsFigures, SampleFigures};

use crate::fingerprint::{query_id, Fingerprinter};

/// pt's fingerprint of one statement (bytes in, bytes out).
#[pyfunction]
fn fingerprint<'py>(py: Python<'py>, query: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, Fingerprinter::new().fingerprint(query))
}

/// pt's query ID of a fingerprint: 32 uppercase hex digits of its MD5.
#[pyfunction(name = "query_id")]
fn py_query_id(fingerprint: &[u8]) -> String {
    query_id(fingerprint)
}

/// A file mapped read-only by the core (`crate::filemap`): ranges digested from it drop
/// the pages they have read. `close` lets it go; ranges still running keep it mapped
/// until they end.
#[pyclass(module = "govern._native", name = "FileMap", frozen)]
struct PyFileMap {
    map: Mutex<Option<Arc<FileMap>>>,
}

#[pymethods]
impl PyFileMap {
    #[new]
    fn new(path: std::path::PathBuf) -> PyResult<Self> {
        let map = FileMap::open(&path)?;
        Ok(PyFileMap { map: Mutex::new(Some(Arc::new(map))) })
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.get()?.as_slice().len())
    }

    fn close(&self) {
        self.map.lock().unwrap().take();
    }
}

impl PyFileMap {
    fn get(&self) -> PyResult<Arc<FileMap>> {
        self.map.lock().unwrap().clone().ok_or_else(|| PyValueError::new_err("this file map is closed"))
    }
}

/// `crate::range::digest_range` over a `FileMap` or any contiguous buffer (bytes, an
/// mmap: memory the core never drops), the GIL released.
fn run_range(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    start: usize,
    stop: usize,
    end: usize,
    options: &RangeOptions,
) -> PyResult<RangeDigest> {
    if let Ok(map) = data.cast::<PyFileMap>() {
        let map = map.get().get()?;
        let start = start.min(map.as_slice().len());
        return Ok(py.detach(|| crate::range::digest_range(Bytes::Mapped(&map), start, stop, end, options)));
    }
    let buffer = PyBuffer::<u8>::get(data)?;
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("a range needs a contiguous buffer"));
    }
    let (ptr, len) = (buffer.buf_ptr() as usize, buffer.len_bytes());
    let result = py.detach(|| {
        // SAFETY: `buffer` keeps the exported memory alive and unmoved until it is dropped,
        // after this closure returns; nothing writes to it meanwhile (a read-only export).
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        crate::range::digest_range(Bytes::Memory(bytes), start.min(len), stop, end, options)
    });
    drop(buffer);
    Ok(result)
}

fn opt_bytes<'py>(py: Python<'py>, v: Option<&[u8]>) -> Bound<'py, PyAny> {
    match v {
        Some(b) => PyBytes::new(py, b).into_any(),
        None => py.None().into_bound(py),
    }
}

fn ts_str<'py>(py: Python<'py>, ts: Option<crate::time::Ts>) -> Bound<'py, PyAny> {
    match ts {
        Some(t) => PyString::new(py, &String::from_utf8_lossy(t.as_bytes())).into_any(),
        None => py.None().into_bound(py),
    }
}

/// A digested range that stays in Rust until a `Total` takes it (`range_handle`).
#[pyclass(module = "govern._native")]
struct Range {
    inner: Option<RangeDigest>,
    /// Where the reader stopped (pt's read-ahead may pass the range's end).
    #[pyo3(get)]
    end: usize,
    /// Newlines from the range's start to `end`.
    #[pyo3(get)]
    newlines: u64,
    /// The reader's first events, left out until the context before the range is known:
    /// digest them again with it (`max_events`) and merge that first.
    #[pyo3(get)]
    deferred_events: u64,
}

/// One byte range digested as govern's Python engine digests it (`crate::range`), kept in
/// Rust: the runner hands the result to `Total.add`. `data` is a `FileMap` (its digested
/// pages are dropped from memory) or any buffer (bytes, an mmap: left as it is); the GIL
/// is released while digesting.
///
/// `since`/`until` (`YYYY-MM-DD HH:MM:SS`) bound the events' inherited ts;
/// `keep_event(db, user, host)` (bytes or None) and `keep_class(fingerprint)` decide the
/// `--filter` conditions (asked once per distinct value; an exception they raise is
/// raised here); `needs_db` says a condition reads the inherited db. `max_events`
/// digests only the reader's first events.
#[pyfunction]
#[pyo3(signature = (data, start, stop, end, max_classes, context_ts, context_db, context_known, server_salt,
                    since=None, until=None, keep_event=None, keep_class=None, needs_db=false, max_events=None))]
#[allow(clippy::too_many_arguments)]
fn range_handle(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    start: usize,
    stop: usize,
    end: usize,
    max_classes: usize,
    context_ts: Option<&[u8]>,
    context_db: Option<&[u8]>,
    context_known: bool,
    server_salt: u64,
    since: Option<&[u8]>,
    until: Option<&[u8]>,
    keep_event: Option<Py<PyAny>>,
    keep_class: Option<Py<PyAny>>,
    needs_db: bool,
    max_events: Option<u64>,
) -> PyResult<Range> {
    // The first exception a filter raises; the digest goes on and it is raised after.
    let failure: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let ask = |f: &Py<PyAny>, args: Vec<Option<&[u8]>>| -> bool {
        Python::attach(|py| {
            let args = PyTuple::new(py, args.into_iter().map(|a| a.map(|b| PyBytes::new(py, b))))?;
            f.call1(py, args)?.is_truthy(py)
        })
        .unwrap_or_else(|err| {
            failure.lock().unwrap().get_or_insert(err);
            true
        })
    };
    let event_fn = keep_event
        .as_ref()
        .map(|f| move |db: Option<&[u8]>, user: Option<&[u8]>, host: Option<&[u8]>| ask(f, vec![db, user, host]));
    let class_fn = keep_class.as_ref().map(|f| move |fp: &[u8]| ask(f, vec![Some(fp)]));
    let filters = Filters {
        needs_db,
        keep_event: event_fn.as_ref().map(|f| f as &KeepEvent),
        keep_class: class_fn.as_ref().map(|f| f as &KeepClass),
    };
    let filtering = filters.keep_event.is_some() || filters.keep_class.is_some();
    let options = RangeOptions {
        max_classes,
        context_ts,
        context_db,
        context_known,
        server_salt,
        since,
        until,
        filters: filtering.then_some(&filters),
        max_events,
    };
    let result = run_range(py, data, start, stop, end, &options)?;
    if let Some(err) = failure.into_inner().unwrap() {
        return Err(err);
    }
    Ok(Range {
        end: result.end,
        newlines: result.newlines,
        deferred_events: result.deferred_events,
        inner: Some(result),
    })
}

/// Ranges merged in input order (`crate::total`); classes are handed out one at a time
/// as `ClassFigures` (read by govern/digest/native_total.py `_class`).
#[pyclass(module = "govern._native", name = "Total")]
struct PyTotal {
    inner: Total,
    /// Query ID (as a number) -> class index, made on the first `fingerprint_of`.
    by_id: Option<HashMap<u128, u32>>,
}

#[pymethods]
impl PyTotal {
    #[new]
    fn new(max_classes: usize) -> Self {
        PyTotal { inner: Total::new(max_classes), by_id: None }
    }

    /// Merge the next range (it is consumed): `file` is its input's index, `line_base`
    /// the lines of that input before the range, `server` its `--host` label.
    #[pyo3(signature = (range, file, line_base, server=None))]
    fn add(
        &mut self,
        py: Python<'_>,
        range: &mut Range,
        file: u32,
        line_base: u64,
        server: Option<&str>,
    ) -> PyResult<()> {
        let r = range.inner.take().ok_or_else(|| PyValueError::new_err("this range was already merged"))?;
        let total = &mut self.inner;
        py.detach(|| total.add(r, file, line_base, server.map(str::as_bytes)));
        Ok(())
    }

    /// The end of the input: runs still open end.
    fn finish(&mut self) {
        self.inner.finish();
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.events
    }

    #[getter]
    fn no_statement(&self) -> u64 {
        self.inner.no_statement
    }

    #[getter]
    fn banners(&self) -> u64 {
        self.inner.banners
    }

    #[getter]
    fn filtered(&self) -> u64 {
        self.inner.filtered
    }

    /// What the next range inherits: the last `ts` (text) and db seen, as bytes.
    fn context<'py>(&self, py: Python<'py>) -> (Bound<'py, PyAny>, Bound<'py, PyAny>) {
        let t = &self.inner;
        (opt_bytes(py, t.last_ts.as_ref().map(|ts| ts.as_bytes())), opt_bytes(py, t.last_db.map(|d| t.texts.get(d))))
    }

    #[getter]
    fn malformed(&self) -> u64 {
        self.inner.malformed
    }

    /// The first malformed events: `(file, line, raw Query_time or None)`.
    fn malformed_kept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for m in &self.inner.malformed_kept {
            let raw = match &m.bad {
                Bad::Truncated => None,
                Bad::QueryTime(raw) => Some(&raw[..]),
            };
            list.append((m.file, m.line, opt_bytes(py, raw)))?;
        }
        Ok(list)
    }

    /// `(minute, events, Query_time in micro-units)`.
    fn minutes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for (minute, (n, micro)) in &self.inner.minutes {
            list.append((ts_str(py, Some(*minute)), *n, *micro))?;
        }
        Ok(list)
    }

    fn __len__(&self) -> usize {
        self.inner.classes.len()
    }

    /// One class's key: `(fingerprint, count, has Query_time, (count, sum, min, max) of
    /// `attribute` or None)`.
    fn key_at<'py>(&self, py: Python<'py>, index: usize, attribute: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
        let t = &self.inner;
        let (fp, slot) = t.classes.get(index).ok_or_else(|| PyIndexError::new_err("no such class"))?;
        let (count, has_time, metric) = slot.with_head(|count, nums| {
            let metric = num_stats(nums, t.num_id(attribute)).map(|s| (s.count(), s.sum(), s.min(), s.max()));
            (count, num_stats(nums, t.num_id(b"Query_time")).is_some(), metric)
        });
        (PyBytes::new(py, t.fingerprints.get(*fp)), count, has_time, metric).into_pyobject(py)
    }

    /// Class indexes, packed as native u32: those with Query_time best first by
    /// `attribute:function` (result.py `Digest.keys`: ties by query ID), and those
    /// without, by query ID.
    fn ranked<'py>(
        &self,
        py: Python<'py>,
        attribute: &[u8],
        function: &str,
    ) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let (reported, unreported) = self.inner.ranked(attribute, function);
        let pack = |v: Vec<u32>| PyBytes::new(py, &v.iter().flat_map(|i| i.to_ne_bytes()).collect::<Vec<u8>>());
        (pack(reported), pack(unreported))
    }

    /// The fingerprint of the class with query ID `id` (32 hex digits), if kept.
    fn fingerprint_of<'py>(&mut self, py: Python<'py>, id: &str) -> Option<Bound<'py, PyBytes>> {
        let t = &self.inner;
        let by_id = self.by_id.get_or_insert_with(|| {
            let ids = t.query_ids();
            t.classes.iter().enumerate().map(|(i, (fp, _))| (ids[*fp as usize], i as u32)).collect()
        });
        let index = *by_id.get(&u128::from_str_radix(id, 16).ok()?)?;
        Some(PyBytes::new(py, t.fingerprints.get(t.classes[index as usize].0)))
    }

    /// The query IDs of classes `indexes` (packed native u32), 16 big-endian bytes each
    /// (their hex is the documents' `id`): the findings of a few classes are looked up
    /// without writing every class one at a time.
    fn query_ids<'py>(&self, py: Python<'py>, indexes: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let t = &self.inner;
        let ids = t.query_ids();
        let mut out = Vec::with_capacity(indexes.len() * 4);
        for chunk in indexes.chunks_exact(4) {
            let index = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) as usize;
            let (fp, _) = t.classes.get(index).ok_or_else(|| PyIndexError::new_err("no such class"))?;
            out.extend_from_slice(&ids[*fp as usize].to_be_bytes());
        }
        Ok(PyBytes::new(py, &out))
    }

    /// The JSON class documents of classes `indexes` (packed native u32), as
    /// govern/digest/document.py writes them with `json.dumps` (`crate::document`): None
    /// for a class Python must build itself. `total_time` in micro-units, the window in
    /// seconds, `sources` the inputs' names by file index.
    fn class_json<'py>(
        &self,
        py: Python<'py>,
        indexes: &[u8],
        total_time: i128,
        window_seconds: Option<f64>,
        sources: Vec<Option<String>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ctx = crate::document::Context::new(&self.inner, total_time, window_seconds, sources);
        let list = PyList::empty(py);
        let mut text = String::new();
        for chunk in indexes.chunks_exact(4) {
            let index = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) as usize;
            if index >= self.inner.classes.len() {
                return Err(PyIndexError::new_err("no such class"));
            }
            text.clear();
            if crate::document::class_json(&self.inner, index, &ctx, &mut text) {
                list.append(PyString::new(py, &text))?;
            } else {
                list.append(py.None())?;
            }
        }
        Ok(list)
    }

    /// `class_json` for the output: the documents as UTF-8, those written in a row
    /// joined by `", "` in one bytes object (one copy into Python, no text object per
    /// class), and in place of a class Python must build, its position in `indexes`.
    /// Written without the GIL, on as many threads as cores (`document::class_runs`).
    fn class_json_runs<'py>(
        &self,
        py: Python<'py>,
        indexes: &[u8],
        total_time: i128,
        window_seconds: Option<f64>,
        sources: Vec<Option<String>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ctx = crate::document::Context::new(&self.inner, total_time, window_seconds, sources);
        let mut positions = Vec::with_capacity(indexes.len() / 4);
        for chunk in indexes.chunks_exact(4) {
            let index = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) as usize;
            if index >= self.inner.classes.len() {
                return Err(PyIndexError::new_err("no such class"));
            }
            positions.push(index);
        }
        let total = &self.inner;
        let pieces = py.detach(|| crate::document::class_runs(total, &positions, &ctx));
        let list = PyList::empty(py);
        for piece in pieces {
            match piece {
                crate::document::Piece::Run(text) => list.append(PyBytes::new(py, text.as_bytes()))?,
                crate::document::Piece::Python(position) => list.append(position)?,
            }
        }
        Ok(list)
    }

    /// What the digest rules' screens read of classes `indexes` (packed native u32), in
    /// columns (govern/rules/screen.py): `(samples, sample_ends, fingerprints,
    /// fingerprint_ends, counts, flags, maxes)`. Samples and fingerprints are joined, each
    /// ending where its end says (native u64); counts are native u64; a flag byte per
    /// class (1 has a sample, 2 truncated, 4 lexically plain (`crate::screen`), 8 sampled:
    /// a Log_slow_rate_limit other than 0 or 1, 16 some row examined, sent or affected);
    /// `maxes` holds, per name of `metrics`, each class's largest value (native f64,
    /// micro-units; -1 without values), 32 the fingerprint may start with one of `verbs`
    /// (`crate::screen::may_write`). `words` are the statement words META001 knows.
    #[allow(clippy::type_complexity)]
    fn rule_columns<'py>(
        &self,
        py: Python<'py>,
        indexes: &[u8],
        words: Vec<Vec<u8>>,
        max_depth: usize,
        metrics: Vec<Vec<u8>>,
        verbs: Vec<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let t = &self.inner;
        let mut words = words;
        words.sort();
        let rows = [b"Rows_examined".as_slice(), b"Rows_sent", b"Rows_affected"].map(|m| t.num_id(m));
        let wanted: Vec<Option<u32>> = metrics.iter().map(|m| t.num_id(m)).collect();
        let rate = (0..t.text_names.len() as u32).find(|&i| t.text_names.get(i) == b"Log_slow_rate_limit");
        let (mut samples, mut sample_ends, mut prints, mut print_ends) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut counts, mut flags) = (Vec::new(), Vec::new());
        let mut maxes: Vec<Vec<u8>> = vec![Vec::new(); wanted.len()];
        let verbs: Vec<Vec<u8>> = verbs;
        for chunk in indexes.chunks_exact(4) {
            let index = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) as usize;
            let (fp, slot) = t.classes.get(index).ok_or_else(|| PyIndexError::new_err("no such class"))?;
            let fingerprint = t.fingerprints.get(*fp);
            let count = slot.head(|count, nums, strings, sample| {
                let stats = |id: Option<u32>| id.and_then(|i| nums.get(i as usize)).filter(|s| s.count() > 0);
                let mut flag = 0u8;
                if let Some(sample) = sample {
                    flag |= 1;
                    if sample.truncated {
                        flag |= 2;
                    }
                    if crate::screen::lexically_plain(&sample.query, &words, max_depth) {
                        flag |= 4;
                    }
                    samples.extend_from_slice(&sample.query);
                }
                if let Some(values) = rate.and_then(|i| strings.get(i as usize)) {
                    if values.other > 0 || values.list.iter().any(|&(v, _)| !matches!(t.texts.get(v), b"0" | b"1")) {
                        flag |= 8;
                    }
                }
                if rows.iter().any(|&id| stats(id).is_some_and(|s| s.max() != 0)) {
                    flag |= 16;
                }
                if crate::screen::may_write(fingerprint, &verbs) {
                    flag |= 32;
                }
                for (found, id) in maxes.iter_mut().zip(&wanted) {
                    let value = stats(*id).map_or(-1.0, |s| s.max() as f64);
                    found.extend_from_slice(&value.to_ne_bytes());
                }
                flags.push(flag);
                count
            });
            prints.extend_from_slice(fingerprint);
            sample_ends.extend_from_slice(&(samples.len() as u64).to_ne_bytes());
            print_ends.extend_from_slice(&(prints.len() as u64).to_ne_bytes());
            counts.extend_from_slice(&count.to_ne_bytes());
        }
        let maxes = PyList::new(py, maxes.iter().map(|m| PyBytes::new(py, m)))?;
        (
            PyBytes::new(py, &samples),
            PyBytes::new(py, &sample_ends),
            PyBytes::new(py, &prints),
            PyBytes::new(py, &print_ends),
            PyBytes::new(py, &counts),
            PyBytes::new(py, &flags),
            maxes,
        )
            .into_pyobject(py)
    }

    fn class_at(&self, py: Python<'_>, index: usize) -> PyResult<ClassFigures> {
        let (fp, slot) = self.inner.classes.get(index).ok_or_else(|| PyIndexError::new_err("no such class"))?;
        ClassFigures::new(py, &self.inner, Some(*fp), &slot.get(), &mut HashMap::new())
    }

    /// The events of classes beyond the cap, as one class (None: none).
    fn other(&self, py: Python<'_>) -> PyResult<Option<ClassFigures>> {
        self.inner.other.as_ref().map(|c| ClassFigures::new(py, &self.inner, None, c, &mut HashMap::new())).transpose()
    }

    /// Every class and `other` merged into one.
    fn totals(&self, py: Python<'_>) -> PyResult<ClassFigures> {
        ClassFigures::new(py, &self.inner, None, &self.inner.totals(), &mut HashMap::new())
    }
}

/// A class's statistics of numeric attribute `id`, if it has values.
fn num_stats(nums: &[crate::aggregate::NumStats], id: Option<u32>) -> Option<&crate::aggregate::NumStats> {
    id.and_then(|i| nums.get(i as usize)).filter(|s| s.count() > 0)
}

/// The fingerprints (joined, each ending where `ends` says: native u64) that name one
/// of `keys` (`crate::screen::names_one_of`), as indexes (native u32).
#[pyfunction]
fn fingerprints_naming<'py>(
    py: Python<'py>,
    fingerprints: &[u8],
    ends: &[u8],
    keys: Vec<Vec<u8>>,
) -> Bound<'py, PyBytes> {
    let keys: std::collections::HashSet<Vec<u8>> = keys.into_iter().collect();
    let mut found: Vec<u8> = Vec::new();
    let mut start = 0usize;
    for (index, chunk) in ends.chunks_exact(8).enumerate() {
        let end = (u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) as usize).min(fingerprints.len());
        if crate::screen::names_one_of(&fingerprints[start.min(end)..end], &keys) {
            found.extend_from_slice(&(index as u32).to_ne_bytes());
        }
        start = end;
    }
    PyBytes::new(py, &found)
}

/// One byte per sample (joined, each ending where `ends` says: native u64): 1 when it is
/// lexically plain (`crate::screen::lexically_plain`; `words` upper case), else 0. What
/// `Total::rule_columns` flags, for classes the core does not hold (a store's merge).
#[pyfunction]
fn plain_samples<'py>(
    py: Python<'py>,
    samples: &[u8],
    ends: &[u8],
    words: Vec<Vec<u8>>,
    max_depth: usize,
) -> Bound<'py, PyBytes> {
    let mut words = words;
    words.sort();
    let mut found: Vec<u8> = Vec::with_capacity(ends.len() / 8);
    let mut start = 0usize;
    for chunk in ends.chunks_exact(8) {
        let end = (u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) as usize).min(samples.len());
        found.push(u8::from(crate::screen::lexically_plain(&samples[start.min(end)..end], &words, max_depth)));
        start = end;
    }
    PyBytes::new(py, &found)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(range_handle, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprints_naming, m)?)?;
    m.add_function(wrap_pyfunction!(plain_samples, m)?)?;
    m.add_class::<Range>()?;
    m.add_class::<PyTotal>()?;
    m.add_class::<PyFileMap>()?;
    m.add_class::<ClassFigures>()?;
    m.add_class::<MetricFigures>()?;
    m.add_class::<SampleFigures>()?;
    m.add_class::<RunsFigures>()?;
    m.add_class::<FitFigures>()?;
    m.add_class::<crate::stored::python::StoredMerge>()?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(py_query_id, m)?)?;
    Ok(())
}
