/** Entry of the counter-sensor example module (run through ./counter-sensor). */
import { runModule } from '@mcloud/module-sdk';
import { counterSensor } from './counter-model.ts';

await runModule({ models: [counterSensor] });
