package xlmr.engines;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.beam.runners.fnexecution.control.ExecutableStageContext;
import org.apache.beam.runners.fnexecution.control.ReferenceCountingExecutableStageContextFactory;
import org.apache.beam.runners.spark.translation.SparkExecutableStageContextFactory;
import org.apache.beam.sdk.fn.server.GrpcFnServer;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A Spark plugin ({@code spark.plugins}) that closes Beam's SDK environments when an executor stops.
 * Beam keeps an executor's environments for {@code --environment_cache_millis} after their last
 * stage and lets the executor's exit cut them: the SDK workers' gRPC streams then break
 * ("Socket closed") where closing them would have ended them, which a LOOPBACK launcher's
 * worker threads report as exceptions. Reads Beam 2.62's private cache by reflection: a Beam
 * that changes it logs a warning here and closes nothing, as before.
 */
public final class ClosingEnvironments implements SparkPlugin {
  /** Time for an SDK worker told to stop to close its streams (milliseconds here; a loaded machine is slower). */
  static final long WORKERS_END_MILLIS = 1000;

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Closer();
  }

  /**
   * One executor's: it closes once, on the executor's stop or in a JVM shutdown hook, whichever
   * comes first. The worker's SIGTERM often follows the driver's "shutdown" at once: Spark's own
   * hook then finds the executor stopping and returns, and the JVM would exit in the middle of the
   * close that the stop began; the hook waits for it.
   */
  private static final class Closer implements ExecutorPlugin {
    private final Thread hook = new Thread(this::closeOnce, "close-beam-environments");
    private boolean closed;

    @Override
    public void init(PluginContext context, Map<String, String> extraConf) {
      Runtime.getRuntime().addShutdownHook(hook);
    }

    @Override
    public void shutdown() {
      closeOnce();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException exiting) {
        // the JVM is exiting: the hook runs and finds the close done
      }
    }

    private synchronized void closeOnce() {
      if (!closed) {
        closed = true;
        closeCachedEnvironments();
      }
    }
  }

  /**
   * Drops the releases Beam has scheduled and closes now what they would have closed: first each
   * environment's control connection, so that its SDK worker closes its own data and state streams
   * ({@code SdkHarness.run}'s end), then, {@link #WORKERS_END_MILLIS} later, the rest. Beam closes
   * the data server right after the control server, and a worker still reading its data stream
   * then fails with "Multiplexer hanging up".
   */
  static void closeCachedEnvironments() {
    try {
      List<ExecutableStageContext> contexts = new ArrayList<>();
      for (Object factory : values(SparkExecutableStageContextFactory.class, null, "jobFactories")) {
        Class<?> counting = ReferenceCountingExecutableStageContextFactory.class;
        ScheduledExecutorService releases = (ScheduledExecutorService) field(counting, "executor").get(factory);
        if (releases != null) {
          releases.shutdownNow();
        }
        for (Object wrapper : values(counting, factory, "keyRegistry")) {
          contexts.add((ExecutableStageContext) field(wrapper.getClass(), "context").get(wrapper));
        }
      }
      for (ExecutableStageContext context : contexts) {
        for (Object client : harnessClients(context)) {
          Object serverInfo = method(client.getClass(), "getServerInfo").invoke(client);
          GrpcFnServer<?> control = (GrpcFnServer<?>) method(serverInfo.getClass(), "getControlServer").invoke(serverInfo);
          control.getService().close();
        }
      }
      if (!contexts.isEmpty()) {
        Thread.sleep(WORKERS_END_MILLIS);
      }
      for (ExecutableStageContext context : contexts) {
        context.close();
      }
      System.err.println("INFO ClosingEnvironments: closed " + contexts.size() + " cached SDK environment context(s)");
    } catch (Exception e) {
      System.err.println("WARN ClosingEnvironments: Beam's SDK environments closed by the executor's exit: " + e);
    }
  }

  /** The connected SDK workers of a {@code DefaultExecutableStageContext}'s job bundle factory. */
  private static List<Object> harnessClients(ExecutableStageContext context) throws ReflectiveOperationException {
    Object jobBundleFactory = field(context.getClass(), "jobBundleFactory").get(context);
    List<Object> clients = new ArrayList<>();
    for (Object cacheAndLock : (List<?>) field(jobBundleFactory.getClass(), "environmentCaches").get(jobBundleFactory)) {
      Object cache = field(cacheAndLock.getClass(), "cache").get(cacheAndLock);
      clients.addAll(((Map<?, ?>) method(cache.getClass(), "asMap").invoke(cache)).values());
    }
    return clients;
  }

  private static Iterable<?> values(Class<?> owner, Object instance, String name) throws ReflectiveOperationException {
    Map<?, ?> map = (Map<?, ?>) field(owner, name).get(instance);
    return map == null ? Collections.emptyList() : map.values();
  }

  private static Method method(Class<?> owner, String name) throws NoSuchMethodException {
    for (Class<?> type = owner; type != null; type = type.getSuperclass()) {
      for (Method method : type.getDeclaredMethods()) {
        if (method.getName().equals(name) && method.getParameterCount() == 0) {
          method.setAccessible(true);
          return method;
        }
      }
    }
    throw new NoSuchMethodException(owner.getName() + "." + name);
  }

  private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
    Field field = owner.getDeclaredField(name);
    field.setAccessible(true);
    return field;
  }
}
