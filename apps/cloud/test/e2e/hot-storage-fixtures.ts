/** A part config whose fake sensors (name → `recent_data_store.stored_hours`) capture Readings at 1 Hz. */
export function hotStorageConfig(windows: Record<string, number>) {
  return {
    components: Object.entries(windows).map(([name, storedHours]) => ({
      name,
      api: 'rdk:component:sensor',
      model: 'fake',
      service_configs: [
        {
          type: 'data_manager',
          attributes: {
            capture_methods: [
              {
                method: 'Readings',
                capture_frequency_hz: 1,
                recent_data_store: { stored_hours: storedHours },
              },
            ],
          },
        },
      ],
    })),
  };
}
