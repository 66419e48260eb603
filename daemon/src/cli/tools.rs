//! The TsFile tool subcommands of the `tsfiled` CLI: dump, convert, sketch, resource,
//! overview. Each is a thin shell over `tsfile::tools`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use tsfile::basic::{Compression, DataType, Encoding};
use tsfile::file::reader::TsFileReader;
use tsfile::tools::{convert, dump, overview, resource_print, sequence, sketch};

/// The format tools.
#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// Print every point of a TsFile in the canonical dump format.
    Dump {
        /// The TsFile.
        file: PathBuf,
    },
    /// Write a TsFile from the canonical dump text.
    Convert(ConvertArgs),
    /// Print the TsFile Sketch: every structure with its position (format 000002, or v4
    /// in the layout of TsFile 2.x's tool; `[version number]` names the format).
    Sketch {
        /// The TsFile.
        file: PathBuf,
        /// Write the sketch here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Read a TsFile (format 000002 or v4) sequentially: every marker, chunk group, chunk
    /// header, page header with its statistics and points, version record (000002) and
    /// the metadata, with positions. The third line names the format read.
    Sequence {
        /// The TsFile.
        file: PathBuf,
    },
    /// Print `.resource` files (IoTDB 0.10 or, for v4 TsFiles, IoTDB 2.x): each device
    /// with its start and end time; the second line names the format.
    Resource {
        /// `.resource` files, TsFiles (their `.resource` is read) or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Overview of IoTDB data directories: sequence/unsequence, storage groups, files
    /// (each TsFile with its format, 000002 or v4).
    Overview {
        /// Comma-separated data directories.
        dirs: String,
        /// Write the overview here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Options of `tsfiled convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Canonical dump text (`-` for standard input).
    input: PathBuf,
    /// The TsFile to write.
    output: PathBuf,
    /// Schema lines `DEVICE<TAB>MEASUREMENT<TAB>ENCODING<TAB>COMPRESSION`.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// Default encoding of a type for series the schema does not name, e.g. `DOUBLE=GORILLA`
    /// (repeatable).
    #[arg(long = "encoding", value_name = "TYPE=ENCODING")]
    encodings: Vec<String>,
    /// Compression of series the schema does not name.
    #[arg(long, default_value = "SNAPPY")]
    compression: String,
    /// Maximum points per page.
    #[arg(long)]
    max_points_per_page: Option<usize>,
    /// Page size in bytes.
    #[arg(long)]
    page_size: Option<usize>,
    /// Chunk-group buffer size in bytes.
    #[arg(long)]
    group_size: Option<usize>,
    /// Maximum degree of index nodes.
    #[arg(long)]
    max_degree: Option<usize>,
    /// TsFile format to write: 2 (`000002`, IoTDB 0.10) or 4 (TsFile 2.x, IoTDB 2.x).
    /// Format 4 writes one chunk group per device; its defaults are TsFile 2.x's (10,000
    /// points per page, index degree 256).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=4))]
    format_version: u8,
}

fn open_output(path: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

fn run_convert(a: &ConvertArgs) -> anyhow::Result<()> {
    let v4 = match a.format_version {
        2 => false,
        4 => true,
        v => return Err(anyhow!("--format-version {v}: expected 2 or 4")),
    };
    let mut opts = convert::ConvertOptions::default();
    if let Some(schema) = &a.schema {
        let f = File::open(schema).with_context(|| format!("cannot open {}", schema.display()))?;
        opts.add_schema(BufReader::new(f))
            .with_context(|| format!("schema {}", schema.display()))?;
    }
    for e in &a.encodings {
        let (t, enc) = e
            .split_once('=')
            .ok_or_else(|| anyhow!("--encoding {e:?}: expected TYPE=ENCODING"))?;
        let t: DataType = t.parse()?;
        let enc: Encoding = if v4 {
            Encoding::from_v4_name(enc)?
        } else {
            enc.parse()?
        };
        if v4 {
            tsfile::file::v4::codec::check(enc, t, Compression::UNCOMPRESSED)?;
        } else {
            enc.check(t)?;
        }
        opts.set_default_encoding(t, enc);
    }
    opts.default_compression = a.compression.parse::<Compression>()?;
    if v4 {
        tsfile::file::v4::codec::check(Encoding::PLAIN, DataType::INT64, opts.default_compression)?;
    } else {
        opts.default_compression.check()?;
    }
    let p = &mut opts.properties;
    if v4 {
        p.max_points_per_page = 10_000;
        p.max_degree = 256;
    }
    if let Some(v) = a.max_points_per_page {
        p.max_points_per_page = v;
    }
    if let Some(v) = a.page_size {
        p.page_size_bytes = v;
    }
    if let Some(v) = a.group_size {
        p.group_size_bytes = v;
    }
    if let Some(v) = a.max_degree {
        p.max_degree = v;
    }
    let out =
        File::create(&a.output).with_context(|| format!("cannot create {}", a.output.display()))?;
    let mut out = BufWriter::new(out);
    if v4 {
        let summary = if a.input.as_os_str() == "-" {
            convert::convert_v4(io::stdin().lock(), &mut out, &opts)
        } else {
            let f = File::open(&a.input)
                .with_context(|| format!("cannot open {}", a.input.display()))?;
            convert::convert_v4(BufReader::new(f), &mut out, &opts)
        }
        .with_context(|| format!("converting {}", a.input.display()))?;
        out.into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
            .with_context(|| format!("cannot sync {}", a.output.display()))?;
        eprintln!(
            "wrote {} (TsFile format v4): {} points, {} series, {} bytes",
            a.output.display(),
            summary.points,
            summary.series,
            summary.file_size
        );
        return Ok(());
    }
    let summary = if a.input.as_os_str() == "-" {
        convert::convert(io::stdin().lock(), &mut out, &opts)
    } else {
        let f =
            File::open(&a.input).with_context(|| format!("cannot open {}", a.input.display()))?;
        convert::convert(BufReader::new(f), &mut out, &opts)
    }
    .with_context(|| format!("converting {}", a.input.display()))?;
    out.into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()
        .with_context(|| format!("cannot sync {}", a.output.display()))?;
    eprintln!(
        "wrote {}: {} points, {} chunks, {} bytes",
        a.output.display(),
        summary.points,
        summary.chunks,
        summary.file_size
    );
    Ok(())
}

/// Whether `path` starts with the v4 head (`TsFile` + version byte 4).
fn is_v4_file(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 7];
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let n = f.read(&mut head)?;
    Ok(tsfile::file::v4::is_v4(&head[..n]))
}

/// Runs one tool; errors are printed by the caller.
pub fn run(cmd: &ToolCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ToolCommand::Dump { file } => {
            if is_v4_file(file)? {
                let reader =
                    tsfile::file::v4::TsFileReaderV4::open_path(file).with_context(|| {
                        format!("cannot read {} (TsFile format v4)", file.display())
                    })?;
                let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
                dump::dump_v4(&reader, &mut out)
                    .with_context(|| format!("dumping {} (TsFile format v4)", file.display()))?;
                out.flush()?;
                return Ok(ExitCode::SUCCESS);
            }
            let reader = TsFileReader::open_path(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            dump::dump(&reader, &mut out).with_context(|| format!("dumping {}", file.display()))?;
            out.flush()?;
        }
        ToolCommand::Convert(a) => run_convert(a)?,
        ToolCommand::Sketch { file, output } => {
            let mut out = open_output(output.as_deref())?;
            let r = sketch::sketch_path(file, &mut out);
            out.flush()?;
            r?;
        }
        ToolCommand::Sequence { file } => {
            let f = std::fs::File::open(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            sequence::sequence(f, &mut out)
                .with_context(|| format!("reading {}", file.display()))?;
            out.flush()?;
        }
        ToolCommand::Resource { paths } => {
            let mut out = BufWriter::new(io::stdout().lock());
            resource_print::print_paths(paths, &chrono::Local, &mut out)?;
            out.flush()?;
        }
        ToolCommand::Overview { dirs, output } => {
            let mut out = open_output(output.as_deref())?;
            overview::overview(&overview::parse_dir_list(dirs), &chrono::Local, &mut out)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
