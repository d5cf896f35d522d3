//! Precomputed document vectors from a NumPy `.npy` file (float32 or
//! float16, C order, shape documents × dimensions): row i is document i in
//! corpus order. Read with `npyz`; rows are L2-normalised like every
//! embedder's output.

use crate::{Error, Result};
use ndarray::Array2;
use std::path::Path;

/// Most dimensions accepted.
const MAX_DIMS: usize = 65_536;

/// Longest `.npy` header accepted, bytes (numpy writes well under 1 KiB).
const MAX_HEADER: u64 = 64 * 1024;

/// Checks the magic and the header's declared length before anything is
/// allocated from it (a v2 header may claim 4 GiB). Returns where the data
/// start.
fn check_header(path: &Path, file: &mut std::fs::File) -> Result<u64> {
    use std::io::{Read, Seek};
    let mut head = [0u8; 12];
    let read = file
        .read(&mut head)
        .map_err(|e| bad(path, format!("cannot read: {e}")))?;
    if read < 10 || &head[..6] != b"\x93NUMPY" {
        return Err(bad(path, "not a .npy file (no \\x93NUMPY magic)"));
    }
    let (len, start) = match head[6] {
        1 => (u64::from(u16::from_le_bytes([head[8], head[9]])), 10),
        2 | 3 if read == 12 => (
            u64::from(u32::from_le_bytes([head[8], head[9], head[10], head[11]])),
            12,
        ),
        v => return Err(bad(path, format!("unsupported .npy version {v}"))),
    };
    if len > MAX_HEADER {
        return Err(bad(
            path,
            format!("a .npy header of {len} bytes (at most {MAX_HEADER})"),
        ));
    }
    file.rewind()
        .map_err(|e| bad(path, format!("cannot read: {e}")))?;
    Ok(start + len)
}

fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Param(format!("{}: {what}", path.display()))
}

/// The file holds exactly the array its header describes: nothing after
/// it, nothing missing (checked for the float types read).
fn check_length(
    path: &Path,
    file_len: u64,
    data_at: u64,
    (rows, dims): (usize, usize),
    descr: &str,
) -> Result<()> {
    let item: u64 = match descr {
        "<f4" | "=f4" => 4,
        "<f2" | "=f2" => 2,
        _ => return Ok(()),
    };
    let expected = (rows as u64)
        .saturating_mul(dims as u64)
        .saturating_mul(item)
        .saturating_add(data_at);
    if file_len != expected {
        return Err(bad(
            path,
            format!("{file_len} bytes, but its header says {expected} (bytes after the array, or cut short)"),
        ));
    }
    Ok(())
}

/// Reads the file into an L2-normalised matrix. The file must be a 2-D
/// float32 or float16 array in C order with finite values.
pub fn read(path: &Path) -> Result<Array2<f32>> {
    let input = treenav_files::open(path, &treenav_files::Kind::new("--embeddings", u64::MAX))?;
    let (file_len, mut file) = (input.len, input.file);
    let data_at = check_header(path, &mut file)?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(file))
        .map_err(|e| bad(path, format!("not a .npy file: {e}")))?;
    let shape = npy.shape().to_vec();
    let [rows, dims] = shape[..] else {
        return Err(bad(
            path,
            format!("expected a 2-D array (documents × dimensions), got shape {shape:?}"),
        ));
    };
    let (rows, dims) = (
        usize::try_from(rows).map_err(|_| bad(path, "too many rows"))?,
        usize::try_from(dims).map_err(|_| bad(path, "too many dimensions"))?,
    );
    if !(1..=MAX_DIMS).contains(&dims) {
        return Err(bad(
            path,
            format!("{dims} dimensions; expected 1..={MAX_DIMS}"),
        ));
    }
    if npy.order() != npyz::Order::C {
        return Err(bad(
            path,
            "Fortran order; save with numpy.ascontiguousarray",
        ));
    }
    let descr = npy.dtype().descr().trim_matches('\'').to_string();
    check_length(path, file_len, data_at, (rows, dims), &descr)?;
    let values: Vec<f32> = match descr.as_str() {
        "<f4" | "=f4" => npy.into_vec::<f32>().map_err(|e| bad(path, e))?,
        "<f2" | "=f2" => npy
            .into_vec::<npyz::half::f16>()
            .map_err(|e| bad(path, e))?
            .into_iter()
            .map(f32::from)
            .collect(),
        other => {
            return Err(bad(
                path,
                format!("dtype {other}; expected float32 (<f4) or float16 (<f2)"),
            ))
        }
    };
    if values.len() != rows.saturating_mul(dims) {
        return Err(bad(
            path,
            format!(
                "{} values for shape {rows} × {dims} (truncated?)",
                values.len()
            ),
        ));
    }
    let mut matrix = Array2::from_shape_vec((rows, dims), values).map_err(|e| bad(path, e))?;
    for (i, mut row) in matrix.rows_mut().into_iter().enumerate() {
        if row.iter().any(|v| !v.is_finite()) {
            return Err(bad(path, format!("row {i} has a NaN or infinite value")));
        }
        let norm = row.dot(&row).sqrt();
        if norm > 0.0 {
            row /= norm;
        }
    }
    Ok(matrix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], values: &[T]) {
        use npyz::WriterBuilder;
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut out)
            .begin_nd()
            .expect("writer");
        w.extend(values.iter().copied()).expect("write");
        w.finish().expect("finish");
    }

    #[test]
    fn reads_normalises_and_refuses_what_is_wrong() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("v.npy");
        write(&good, &[2, 2], &[3.0f32, 4.0, 0.0, 2.0]);
        let m = read(&good).expect("read");
        assert_eq!(m.dim(), (2, 2));
        assert!((m[[0, 0]] - 0.6).abs() < 1e-6 && (m[[1, 1]] - 1.0).abs() < 1e-6);

        let half = dir.path().join("half.npy");
        let h = |v: f32| npyz::half::f16::from_f32(v);
        write(&half, &[1, 2], &[h(0.0), h(5.0)]);
        assert_eq!(read(&half).expect("f16").row(0).to_vec(), vec![0.0, 1.0]);
        let ints = dir.path().join("ints.npy");
        write(&ints, &[1, 2], &[1i32, 2]);
        assert!(read(&ints)
            .expect_err("i32")
            .to_string()
            .contains("float32"));

        let flat = dir.path().join("flat.npy");
        write(&flat, &[4], &[1.0f32; 4]);
        assert!(read(&flat).expect_err("1-D").to_string().contains("2-D"));
        let nan = dir.path().join("nan.npy");
        write(&nan, &[1, 2], &[1.0f32, f32::NAN]);
        assert!(read(&nan).expect_err("nan").to_string().contains("row 0"));
        let junk = dir.path().join("junk.npy");
        std::fs::write(&junk, b"not numpy").expect("write");
        assert!(read(&junk)
            .expect_err("junk")
            .to_string()
            .contains("junk.npy"));
        let cut = dir.path().join("cut.npy");
        let bytes = std::fs::read(&good).expect("read");
        std::fs::write(&cut, &bytes[..bytes.len() - 4]).expect("write");
        assert!(read(&cut).is_err());
        let trailing = dir.path().join("trailing.npy");
        std::fs::write(&trailing, [bytes.as_slice(), b"more"].concat()).expect("write");
        let err = read(&trailing).expect_err("trailing bytes").to_string();
        assert!(err.contains("bytes after the array"), "{err}");
        // A v2 header claiming 4 GiB is refused before anything is allocated.
        let huge = dir.path().join("huge.npy");
        let mut header = b"\x93NUMPY\x02\x00".to_vec();
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        header.extend_from_slice(b"{'descr': '<f4'");
        std::fs::write(&huge, &header).expect("write");
        let err = read(&huge).expect_err("huge header").to_string();
        assert!(err.contains("header of 4294967295 bytes"), "{err}");
    }
}
