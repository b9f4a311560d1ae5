package xlmr.engines;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsRegistrar;
import org.apache.beam.sdk.util.construction.resources.PipelineResourcesDetector;
import org.apache.beam.sdk.util.construction.resources.PipelineResourcesOptions;

/**
 * The jars a Spark job stages to its executors: those named by the job server's system property
 * {@code xlmr.stagedJars} (a path list, maybe empty), where Beam's default stages the job
 * server's whole classpath, Spark's own jars included, which every executor already has.
 * Selected by the pipeline option {@code pipelineResourcesDetectorFactoryClass}, which {@link
 * Registrar} makes the job server describe, so that a Python launcher may set it.
 */
public final class StagedJars implements PipelineResourcesDetector.Factory {
  public static final String PROPERTY = "xlmr.stagedJars";

  public static StagedJars create() {
    return new StagedJars();
  }

  @Override
  public PipelineResourcesDetector getPipelineResourcesDetector() {
    return classLoader -> {
      List<String> jars = new ArrayList<>();
      for (String jar : System.getProperty(PROPERTY, "").split(File.pathSeparator)) {
        if (!jar.isEmpty()) {
          jars.add(jar);
        }
      }
      return jars;
    };
  }

  /** Registers the options that name the detector (listed in META-INF/services). */
  public static final class Registrar implements PipelineOptionsRegistrar {
    @Override
    public Iterable<Class<? extends PipelineOptions>> getPipelineOptions() {
      return Collections.singletonList(PipelineResourcesOptions.class);
    }
  }
}
